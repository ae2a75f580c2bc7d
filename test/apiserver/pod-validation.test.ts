import { TestApiServer, startTestApiServer } from './index';
import { call } from './raw-client';

/**
 * Pod specs, in Pods and in the templates of DaemonSets, Deployments and Jobs,
 * are refused where the real kube-apiserver refuses them (core, apps and batch
 * validation), each with the field path, reason and wording the real one uses.
 */
let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer();
});
afterAll(async () => {
  await server.stop();
});

const container = (extra: object = {}) => ({ name: 'app', image: 'busybox:1.36', ...extra });

/** A pod spec the real server accepts, changed by `edit`. */
function podSpec(edit: (spec: any) => void = () => {}): any {
  const spec: any = {
    containers: [container({ volumeMounts: [{ name: 'data', mountPath: '/data' }], ports: [{ name: 'metrics', containerPort: 8080 }] })],
    volumes: [{ name: 'data', hostPath: { path: '/mnt/data', type: 'DirectoryOrCreate' } }],
  };
  edit(spec);
  return spec;
}

const daemonSet = (name: string, spec: any) => ({
  metadata: { name },
  spec: { selector: { matchLabels: { app: 'a' } }, template: { metadata: { labels: { app: 'a' } }, spec } },
});

let seq = 0;
/** Creates a DaemonSet with this pod spec; returns the 422 causes (or [] when created). */
async function templateCauses(edit: (spec: any) => void): Promise<any[]> {
  const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', daemonSet(`ds-${++seq}`, podSpec(edit)));
  if (r.status === 201) return [];
  expect(r.status).toBe(422);
  return r.body.details.causes;
}

const cause = (reason: string, field: string, message: string) => ({ reason, field, message });

describe('a valid pod spec is accepted', () => {
  test('the baseline DaemonSet is created', async () => {
    expect(await templateCauses(() => {})).toEqual([]);
  });
});

describe('volumes (ValidateVolumes)', () => {
  test('two volumes of one name: the second is a duplicate', async () => {
    const causes = await templateCauses((s) => s.volumes.push({ name: 'data', emptyDir: {} }));
    expect(causes).toEqual([cause('FieldValueDuplicate', 'spec.template.spec.volumes[1].name', 'Duplicate value: "data"')]);
  });

  test('a volume name must be a DNS label', async () => {
    const causes = await templateCauses((s) => {
      s.volumes[0].name = 'Data_Dir';
      s.containers[0].volumeMounts = [];
    });
    expect(causes).toEqual([expect.objectContaining({ reason: 'FieldValueInvalid', field: 'spec.template.spec.volumes[0].name' })]);
    expect(causes[0].message).toContain('a lowercase RFC 1123 label must consist of');
  });

  test('a volume with two sources names the second', async () => {
    const causes = await templateCauses((s) => { s.volumes[0].emptyDir = {}; });
    expect(causes[0]).toEqual(cause('FieldValueForbidden', 'spec.template.spec.volumes[0].hostPath', 'Forbidden: may not specify more than 1 volume type'));
  });

  test('a volume with no source is defaulted to an emptyDir, as v1 defaulting does', async () => {
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', daemonSet('no-source', podSpec((s) => { s.volumes = [{ name: 'data' }]; })));
    expect(r.status).toBe(201);
    expect(r.body.spec.template.spec.volumes).toEqual([{ name: 'data', emptyDir: {} }]);
  });

  test('a hostPath type must be one of the known types', async () => {
    const causes = await templateCauses((s) => { s.volumes[0].hostPath.type = 'Dir'; });
    expect(causes[0]).toEqual(cause('FieldValueNotSupported', 'spec.template.spec.volumes[0].hostPath.type',
      'Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"'));
  });

  test('a hostPath needs a path without ".." elements', async () => {
    expect((await templateCauses((s) => { s.volumes[0].hostPath.path = ''; }))[0])
      .toEqual(cause('FieldValueRequired', 'spec.template.spec.volumes[0].hostPath.path', 'Required value'));
    expect((await templateCauses((s) => { s.volumes[0].hostPath.path = '/mnt/../etc'; }))[0])
      .toEqual(cause('FieldValueInvalid', 'spec.template.spec.volumes[0].hostPath.path', 'Invalid value: "/mnt/../etc": must not contain \'..\''));
  });

  test('a configMap volume names its ConfigMap and has a file mode up to 0777', async () => {
    const causes = await templateCauses((s) => s.volumes.push({ name: 'config', configMap: { defaultMode: 0o1000 } }));
    expect(causes).toEqual([
      cause('FieldValueRequired', 'spec.template.spec.volumes[1].configMap.name', 'Required value'),
      cause('FieldValueInvalid', 'spec.template.spec.volumes[1].configMap.defaultMode', 'Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive'),
    ]);
  });
});

describe('volume mounts (ValidateVolumeMounts)', () => {
  test('two mounts on one path: the second is not unique', async () => {
    const causes = await templateCauses((s) => {
      s.volumes.push({ name: 'more', emptyDir: {} });
      s.containers[0].volumeMounts.push({ name: 'more', mountPath: '/data' });
    });
    expect(causes).toEqual([cause('FieldValueInvalid', 'spec.template.spec.containers[0].volumeMounts[1].mountPath', 'Invalid value: "/data": must be unique')]);
  });

  test('a mount of a volume the pod does not declare is not found', async () => {
    const causes = await templateCauses((s) => s.containers[0].volumeMounts.push({ name: 'ghost', mountPath: '/ghost' }));
    expect(causes).toEqual([cause('FieldValueNotFound', 'spec.template.spec.containers[0].volumeMounts[1].name', 'Not found: "ghost"')]);
  });

  test('a mount of a volume that is itself invalid is not found either', async () => {
    const causes = await templateCauses((s) => { s.volumes[0].hostPath.type = 'Dir'; });
    expect(causes.map((c: any) => `${c.reason} ${c.field}`)).toEqual([
      'FieldValueNotSupported spec.template.spec.volumes[0].hostPath.type',
      'FieldValueNotFound spec.template.spec.containers[0].volumeMounts[0].name',
    ]);
  });

  test('a mountPath is required', async () => {
    const causes = await templateCauses((s) => { s.containers[0].volumeMounts[0].mountPath = ''; });
    expect(causes).toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].volumeMounts[0].mountPath', 'Required value')]);
  });

  test('mountPropagation is one of the known modes', async () => {
    const causes = await templateCauses((s) => { s.containers[0].volumeMounts[0].mountPropagation = 'Shared'; });
    expect(causes).toEqual([cause('FieldValueNotSupported', 'spec.template.spec.containers[0].volumeMounts.mountPropagation',
      'Unsupported value: "Shared": supported values: "Bidirectional", "HostToContainer", "None"')]);
  });

  test('Bidirectional propagation only for privileged containers', async () => {
    const causes = await templateCauses((s) => { s.containers[0].volumeMounts[0].mountPropagation = 'Bidirectional'; });
    expect(causes).toEqual([cause('FieldValueForbidden', 'spec.template.spec.containers[0].volumeMounts.mountPropagation',
      'Forbidden: Bidirectional mount propagation is available only to privileged containers')]);
    expect(await templateCauses((s) => {
      s.containers[0].volumeMounts[0].mountPropagation = 'Bidirectional';
      s.containers[0].securityContext = { privileged: true };
    })).toEqual([]);
  });

  test('a subPath is relative and does not climb', async () => {
    const causes = await templateCauses((s) => { s.containers[0].volumeMounts[0].subPath = '/abs/../x'; });
    expect(causes).toEqual([
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].volumeMounts.subPath', 'Invalid value: "/abs/../x": must be a relative path'),
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].volumeMounts.subPath', 'Invalid value: "/abs/../x": must not contain \'..\''),
    ]);
  });
});

describe('containers (validateContainers, validateContainerCommon)', () => {
  test('an image is required, an empty one too', async () => {
    const causes = await templateCauses((s) => { s.containers[0].image = ''; });
    expect(causes).toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].image', 'Required value')]);
  });

  test('an init container needs an image as well', async () => {
    const causes = await templateCauses((s) => { s.initContainers = [{ name: 'init' }]; });
    expect(causes).toEqual([cause('FieldValueRequired', 'spec.template.spec.initContainers[0].image', 'Required value')]);
  });

  test('container names are DNS labels', async () => {
    const causes = await templateCauses((s) => { s.containers[0].name = 'App'; });
    expect(causes).toEqual([expect.objectContaining({ reason: 'FieldValueInvalid', field: 'spec.template.spec.containers[0].name' })]);
  });

  test('container names are unique across containers and init containers', async () => {
    const causes = await templateCauses((s) => {
      s.containers.push(container());
      s.initContainers = [container({ name: 'app' })];
    });
    expect(causes).toEqual([
      cause('FieldValueDuplicate', 'spec.template.spec.containers[1].name', 'Duplicate value: "app"'),
      cause('FieldValueDuplicate', 'spec.template.spec.initContainers[0].name', 'Duplicate value: "app"'),
    ]);
  });

  test('imagePullPolicy is one of the known policies', async () => {
    const causes = await templateCauses((s) => { s.containers[0].imagePullPolicy = 'Sometimes'; });
    expect(causes).toEqual([cause('FieldValueNotSupported', 'spec.template.spec.containers[0].imagePullPolicy',
      'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"')]);
  });

  test('a regular container may not have a restartPolicy; an init container only Always', async () => {
    const causes = await templateCauses((s) => {
      s.containers[0].restartPolicy = 'Always';
      s.initContainers = [container({ name: 'init', restartPolicy: 'Never' })];
    });
    expect(causes).toEqual([
      cause('FieldValueForbidden', 'spec.template.spec.containers[0].restartPolicy', 'Forbidden: may not be set for non-init containers'),
      cause('FieldValueNotSupported', 'spec.template.spec.initContainers[0].restartPolicy', 'Unsupported value: "Never": supported values: "Always"'),
    ]);
  });

  test('an init container has probes only as a sidecar (restartPolicy Always)', async () => {
    const probe = { exec: { command: ['true'] } };
    expect(await templateCauses((s) => { s.initContainers = [container({ name: 'init', readinessProbe: probe })]; }))
      .toEqual([cause('FieldValueForbidden', 'spec.template.spec.initContainers[0].readinessProbe', 'Forbidden: may not be set for init containers without restartPolicy=Always')]);
    expect(await templateCauses((s) => { s.initContainers = [container({ name: 'init', restartPolicy: 'Always', readinessProbe: probe })]; })).toEqual([]);
  });
});

describe('ports (validateContainerPorts)', () => {
  test('containerPort is in 1..65535', async () => {
    const causes = await templateCauses((s) => { s.containers[0].ports[0].containerPort = 70000; });
    expect(causes).toEqual([cause('FieldValueInvalid', 'spec.template.spec.containers[0].ports[0].containerPort', 'Invalid value: 70000: must be between 1 and 65535, inclusive')]);
  });

  test('port names are IANA service names, unique in the container', async () => {
    const causes = await templateCauses((s) => s.containers[0].ports.push({ name: 'metrics', containerPort: 9090 }, { name: 'Web_UI', containerPort: 9091 }));
    expect(causes).toEqual([
      cause('FieldValueDuplicate', 'spec.template.spec.containers[0].ports[1].name', 'Duplicate value: "metrics"'),
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].ports[2].name', 'Invalid value: "Web_UI": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
    ]);
  });

  test('a port name needs a letter and at most 15 characters', async () => {
    const causes = await templateCauses((s) => s.containers[0].ports.push({ name: '8080', containerPort: 9090 }, { name: 'a-very-long-port-name', containerPort: 9091 }));
    expect(causes.map((c: any) => c.message)).toEqual([
      'Invalid value: "8080": must contain at least one letter (a-z)',
      'Invalid value: "a-very-long-port-name": must be no more than 15 characters',
    ]);
  });

  test('two containers may not claim one host port', async () => {
    const causes = await templateCauses((s) => {
      s.containers[0].ports[0].hostPort = 8080;
      s.containers.push(container({ name: 'other', ports: [{ containerPort: 9000, hostPort: 8080 }] }));
    });
    expect(causes).toEqual([cause('FieldValueDuplicate', 'spec.template.spec.containers[1].ports[0].hostPort', 'Duplicate value: "TCP//8080"')]);
  });
});

describe('probes (validateProbe, validateHandler)', () => {
  test('a probe needs exactly one handler', async () => {
    expect(await templateCauses((s) => { s.containers[0].livenessProbe = { periodSeconds: 5 }; }))
      .toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].livenessProbe', 'Required value: must specify a handler type')]);
    expect(await templateCauses((s) => { s.containers[0].livenessProbe = { exec: { command: ['true'] }, tcpSocket: { port: 8080 } }; }))
      .toEqual([cause('FieldValueForbidden', 'spec.template.spec.containers[0].livenessProbe.tcpSocket', 'Forbidden: may not specify more than 1 handler type')]);
  });

  test('a probe port is a number in range or a valid port name', async () => {
    expect(await templateCauses((s) => { s.containers[0].readinessProbe = { httpGet: { path: '/readyz', port: 0 } }; }))
      .toEqual([cause('FieldValueInvalid', 'spec.template.spec.containers[0].readinessProbe.httpGet.port', 'Invalid value: 0: must be between 1 and 65535, inclusive')]);
    expect(await templateCauses((s) => { s.containers[0].readinessProbe = { tcpSocket: { port: 'metrics_port' } }; }))
      .toEqual([cause('FieldValueInvalid', 'spec.template.spec.containers[0].readinessProbe.tcpSocket.port',
        'Invalid value: "metrics_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)')]);
  });

  test('a named probe port is checked for syntax only, as the real server does', async () => {
    expect(await templateCauses((s) => { s.containers[0].readinessProbe = { httpGet: { path: '/', port: 'not-declared' } }; })).toEqual([]);
  });

  test('timings may not be negative; liveness and startup succeed after one success', async () => {
    const causes = await templateCauses((s) => {
      s.containers[0].livenessProbe = { exec: { command: ['true'] }, periodSeconds: -1, successThreshold: 2 };
    });
    expect(causes).toEqual([
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].livenessProbe.periodSeconds', 'Invalid value: -1: must be greater than or equal to 0'),
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].livenessProbe.successThreshold', 'Invalid value: 2: must be 1'),
    ]);
  });

  test('probe timings are defaulted as the real server defaults them', async () => {
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets',
      daemonSet('probe-defaults', podSpec((s) => { s.containers[0].readinessProbe = { httpGet: { port: 'metrics' } }; })));
    expect(r.body.spec.template.spec.containers[0].readinessProbe).toEqual({
      httpGet: { path: '/', port: 'metrics', scheme: 'HTTP' }, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3,
    });
  });

  test('an exec handler needs a command', async () => {
    expect(await templateCauses((s) => { s.containers[0].startupProbe = { exec: {} }; }))
      .toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].startupProbe.exec.command', 'Required value')]);
  });
});

describe('environment (ValidateEnv)', () => {
  test('env names are printable ASCII without "="', async () => {
    const causes = await templateCauses((s) => { s.containers[0].env = [{ name: 'A=B', value: '1' }, { name: '', value: '2' }]; });
    expect(causes).toEqual([
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].env[0].name', 'Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than \'=\''),
      cause('FieldValueRequired', 'spec.template.spec.containers[0].env[1].name', 'Required value'),
    ]);
  });

  test('valueFrom has exactly one source and no value beside it', async () => {
    const causes = await templateCauses((s) => {
      s.containers[0].env = [{ name: 'A', valueFrom: {} }, { name: 'B', value: 'x', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }];
    });
    expect(causes).toEqual([
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].env[0].valueFrom', 'Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'),
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].env[1].valueFrom', 'Invalid value: "": may not be specified when `value` is not empty'),
    ]);
  });

  test('a fieldRef names a field the downward API gives to env', async () => {
    expect(await templateCauses((s) => { s.containers[0].env = [{ name: 'N', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]; })).toEqual([]);
    const causes = await templateCauses((s) => { s.containers[0].env = [{ name: 'P', valueFrom: { fieldRef: { fieldPath: 'status.phase' } } }]; });
    expect(causes).toEqual([expect.objectContaining({ reason: 'FieldValueNotSupported', field: 'spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath' })]);
  });
});

describe('resources (ValidateContainerResourceRequirements)', () => {
  test('a request above its limit is invalid, whatever the units', async () => {
    const causes = await templateCauses((s) => { s.containers[0].resources = { requests: { memory: '2Gi', cpu: '100m' }, limits: { memory: '2000Mi', cpu: '0.1' } }; });
    expect(causes).toEqual([cause('FieldValueInvalid', 'spec.template.spec.containers[0].resources.requests', 'Invalid value: "2Gi": must be less than or equal to memory limit of 2000Mi')]);
  });

  test('quantities may not be negative; names are standard resources', async () => {
    const causes = await templateCauses((s) => { s.containers[0].resources = { requests: { cpu: '-1', gpu: '1' } }; });
    expect(causes).toEqual([
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].resources.requests[cpu]', 'Invalid value: "-1": must be greater than or equal to 0'),
      cause('FieldValueInvalid', 'spec.template.spec.containers[0].resources.requests[gpu]', 'Invalid value: "gpu": must be a standard resource for containers'),
    ]);
  });

  test('an extended resource request needs an equal limit', async () => {
    expect(await templateCauses((s) => { s.containers[0].resources = { requests: { 'example.com/gpu': '1' } }; }))
      .toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].resources.limits', 'Required value: Limit must be set for non overcommitable resources')]);
  });

  test('a quantity the Go type cannot parse fails decoding (400)', async () => {
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets',
      daemonSet('bad-quantity', podSpec((s) => { s.containers[0].resources = { limits: { memory: 'lots' } }; })));
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('DaemonSet in version "v1" cannot be handled as a DaemonSet: '
      + "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  });
});

describe('pod-level fields (ValidatePodSpec)', () => {
  test('serviceAccountName is a DNS subdomain', async () => {
    const causes = await templateCauses((s) => { s.serviceAccountName = 'Agent_SA'; });
    expect(causes).toEqual([expect.objectContaining({ reason: 'FieldValueInvalid', field: 'spec.template.spec.serviceAccountName' })]);
  });

  test('nodeSelector keys and values are label keys and values', async () => {
    const causes = await templateCauses((s) => { s.nodeSelector = { 'kubernetes.io/os': 'linux/amd64' }; });
    expect(causes).toEqual([expect.objectContaining({ reason: 'FieldValueInvalid', field: 'spec.template.spec.nodeSelector', message: expect.stringContaining('Invalid value: "linux/amd64"') })]);
  });

  test('the security context ids are in range and sysctl names well formed', async () => {
    const causes = await templateCauses((s) => { s.securityContext = { runAsUser: -1, sysctls: [{ name: 'net..ipv4', value: '1' }] }; });
    expect(causes.map((c: any) => c.field)).toEqual(['spec.template.spec.securityContext.runAsUser', 'spec.template.spec.securityContext.sysctls[0].name']);
  });

  test('a container cannot be privileged and forbid privilege escalation', async () => {
    const causes = await templateCauses((s) => { s.containers[0].securityContext = { privileged: true, allowPrivilegeEscalation: false }; });
    expect(causes).toEqual([expect.objectContaining({
      field: 'spec.template.spec.containers[0].securityContext',
      message: expect.stringContaining('cannot set `allowPrivilegeEscalation` to false and `privileged` to true'),
    })]);
  });

  test('dnsPolicy is one of the known policies', async () => {
    const causes = await templateCauses((s) => { s.dnsPolicy = 'Cluster'; });
    expect(causes).toEqual([cause('FieldValueNotSupported', 'spec.template.spec.dnsPolicy',
      'Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"')]);
  });
});

describe('scheduling (ValidateTolerations, validateAffinity)', () => {
  test('a toleration without a key must use Exists', async () => {
    const causes = await templateCauses((s) => { s.tolerations = [{ operator: 'Equal', value: 'x' }]; });
    expect(causes).toEqual([cause('FieldValueInvalid', 'spec.template.spec.tolerations[0].operator',
      'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"')]);
  });

  test('Exists takes no value; tolerationSeconds only with NoExecute; effects are known', async () => {
    const causes = await templateCauses((s) => {
      s.tolerations = [{ key: 'k', operator: 'Exists', value: 'v' }, { key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 5 }, { key: 'k', effect: 'Never' }];
    });
    expect(causes).toEqual([
      cause('FieldValueInvalid', 'spec.template.spec.tolerations[0].operator', 'Invalid value: "v": value must be empty when `operator` is \'Exists\''),
      cause('FieldValueInvalid', 'spec.template.spec.tolerations[1].effect', 'Invalid value: "NoSchedule": effect must be \'NoExecute\' when `tolerationSeconds` is set'),
      cause('FieldValueNotSupported', 'spec.template.spec.tolerations[2].effect', 'Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'),
    ]);
  });

  test('an unknown toleration operator is not supported', async () => {
    const causes = await templateCauses((s) => { s.tolerations = [{ key: 'k', operator: 'In' }]; });
    expect(causes).toEqual([cause('FieldValueNotSupported', 'spec.template.spec.tolerations[0].operator', 'Unsupported value: "In": supported values: "Equal", "Exists"')]);
  });

  test('node affinity terms are checked as node selector terms', async () => {
    const causes = await templateCauses((s) => {
      s.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }] } } };
    });
    expect(causes).toEqual([cause('FieldValueForbidden',
      'spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values',
      "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")]);
  });

  test('a required node affinity needs at least one term; preferred terms weigh 1..100', async () => {
    const causes = await templateCauses((s) => {
      s.affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] },
          preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 0, preference: {} }],
        },
      };
    });
    expect(causes).toEqual([
      cause('FieldValueRequired', 'spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms', 'Required value: must have at least one node selector term'),
      cause('FieldValueInvalid', 'spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight', 'Invalid value: 0: must be in the range 1-100'),
    ]);
  });

  test('a pod affinity term needs a topology key', async () => {
    const causes = await templateCauses((s) => {
      s.affinity = { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'a' } } }] } };
    });
    expect(causes[0]).toEqual(cause('FieldValueRequired', 'spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey', 'Required value: can not be empty'));
  });
});

describe('workloads (apps and batch validation)', () => {
  test('a DaemonSet or Deployment template restarts Always', async () => {
    const causes = await templateCauses((s) => { s.restartPolicy = 'OnFailure'; });
    expect(causes).toEqual([cause('FieldValueNotSupported', 'spec.template.spec.restartPolicy', 'Unsupported value: "OnFailure": supported values: "Always"')]);
  });

  test('a Job template may not restart Always (the default), and says which values it takes', async () => {
    const job = (name: string, restartPolicy?: string) => ({
      metadata: { name },
      spec: { template: { spec: { ...podSpec(), ...(restartPolicy ? { restartPolicy } : {}) } } },
    });
    const defaulted = await call(server, 'POST', '/apis/batch/v1/namespaces/default/jobs', job('job-default'));
    expect(defaulted.body.details.causes).toEqual([cause('FieldValueRequired', 'spec.template.spec.restartPolicy', 'Required value: valid values: "OnFailure", "Never"')]);
    expect((await call(server, 'POST', '/apis/batch/v1/namespaces/default/jobs', job('job-never', 'Never'))).status).toBe(201);
  });

  test('a Job template is validated as a pod template', async () => {
    const r = await call(server, 'POST', '/apis/batch/v1/namespaces/default/jobs',
      { metadata: { name: 'job-dup' }, spec: { template: { spec: podSpec((s) => { s.restartPolicy = 'Never'; s.volumes.push({ name: 'data', emptyDir: {} }); }) } } });
    expect(r.body.details.causes).toEqual([cause('FieldValueDuplicate', 'spec.template.spec.volumes[1].name', 'Duplicate value: "data"')]);
  });

  test('a Deployment template is validated as a pod template', async () => {
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'dep-no-image' },
      spec: { selector: { matchLabels: { app: 'a' } }, template: { metadata: { labels: { app: 'a' } }, spec: podSpec((s) => { s.containers[0].image = ''; }) } },
    });
    expect(r.body.details.causes).toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].image', 'Required value')]);
  });

  test('an empty selector is invalid for a DaemonSet', async () => {
    const ds = daemonSet('empty-selector', podSpec());
    ds.spec.selector = {} as any;
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', ds);
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.selector', 'Invalid value: {}: empty selector is invalid for daemonset')]);
  });

  test('a DaemonSet rolling update may not surge and drop pods at once', async () => {
    const ds: any = daemonSet('surge', podSpec());
    ds.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } };
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', ds);
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.updateStrategy.rollingUpdate.maxSurge', 'Invalid value: 1: may not be set when maxUnavailable is non-zero')]);
  });

  test('a Deployment progress deadline exceeds minReadySeconds', async () => {
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'dep-deadline' },
      spec: { minReadySeconds: 60, progressDeadlineSeconds: 30, selector: { matchLabels: { app: 'a' } }, template: { metadata: { labels: { app: 'a' } }, spec: podSpec() } },
    });
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.progressDeadlineSeconds', 'Invalid value: 30: must be greater than minReadySeconds')]);
  });
});

describe('pods (validatePodMetadataAndSpec, ValidatePodCreate)', () => {
  const pod = (name: string, spec: any) => ({ metadata: { name }, spec });

  test('a Pod spec gets the same checks as a template, at spec.*', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/pods', pod('dup-paths', podSpec((s) => {
      s.volumes.push({ name: 'more', emptyDir: {} });
      s.containers[0].volumeMounts.push({ name: 'more', mountPath: '/data' });
    })));
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.containers[0].volumeMounts[1].mountPath', 'Invalid value: "/data": must be unique')]);
  });

  test('a Pod image may not have surrounding whitespace (templates may)', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/pods', pod('spaced', podSpec((s) => { s.containers[0].image = ' busybox '; })));
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.containers[0].image', 'Invalid value: " busybox ": must not have leading or trailing whitespace')]);
    expect(await templateCauses((s) => { s.containers[0].image = ' busybox '; })).toEqual([]);
  });

  test('with the host network a Pod port is its host port', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/pods', pod('host-net', podSpec((s) => {
      s.hostNetwork = true;
      s.containers[0].ports[0].hostPort = 9999;
    })));
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.containers[0].ports[0].hostPort', 'Invalid value: 9999: must match `containerPort` when `hostNetwork` is true')]);
    const defaulted = await call(server, 'POST', '/api/v1/namespaces/default/pods', pod('host-net-ok', podSpec((s) => { s.hostNetwork = true; })));
    expect(defaulted.body.spec.containers[0].ports[0].hostPort).toBe(8080);
  });
});

describe('what the construct could emit before it checked its props (issue 16.3), built by hand', () => {
  /** The agent DaemonSet's pod spec as the construct builds it, with `extraVolumes`, `extraVolumeMounts` and `image` added. */
  function agent(extraVolumes: object[], extraMounts: object[], image = 'ghcr.io/local-volume-provisioner/local-volume-provisioner:0.0.0'): any {
    return daemonSet(`agent-${++seq}`, {
      serviceAccountName: 'local-volume-provisioner',
      containers: [{
        name: 'provisioner',
        image,
        securityContext: { privileged: true },
        ports: [{ name: 'metrics', containerPort: 8080 }],
        livenessProbe: { httpGet: { path: '/healthz', port: 'metrics' } },
        volumeMounts: [
          { name: 'config', mountPath: '/etc/provisioner/config', readOnly: true },
          { name: 'class-fast-disks', mountPath: '/mnt/fast-disks', mountPropagation: 'HostToContainer' },
          { name: 'dev', mountPath: '/dev' },
          ...extraMounts,
        ],
      }],
      volumes: [
        { name: 'config', configMap: { name: 'local-volume-provisioner-config' } },
        { name: 'class-fast-disks', hostPath: { path: '/mnt/fast-disks', type: 'DirectoryOrCreate' } },
        { name: 'dev', hostPath: { path: '/dev', type: 'Directory' } },
        ...extraVolumes,
      ],
    });
  }
  const create = (ds: any) => call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', ds);

  test('an extra volume named like one of the construct\'s own is refused', async () => {
    const r = await create(agent([{ name: 'config', hostPath: { path: '/etc/lvp' } }], []));
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([cause('FieldValueDuplicate', 'spec.template.spec.volumes[3].name', 'Duplicate value: "config"')]);
  });

  test('an extra mount on a path the construct already mounts is refused', async () => {
    const r = await create(agent([{ name: 'host-dev', hostPath: { path: '/dev' } }], [{ name: 'host-dev', mountPath: '/dev' }]));
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([cause('FieldValueInvalid', 'spec.template.spec.containers[0].volumeMounts[3].mountPath', 'Invalid value: "/dev": must be unique')]);
  });

  test('an empty image is refused', async () => {
    const r = await create(agent([], [], ''));
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([cause('FieldValueRequired', 'spec.template.spec.containers[0].image', 'Required value')]);
  });

  test('the same DaemonSet without those additions is accepted', async () => {
    expect((await create(agent([], []))).status).toBe(201);
  });
});
