/**
 * The protobuf wire layout of the Go types whose protobuf bodies this server
 * decodes: field numbers and types, as in the `protobuf:"..."` tags of
 * k8s.io/api and k8s.io/apimachinery. Described are the kinds kubectl's
 * imperative `create` commands send for the resources served here, down to
 * what those commands set in a pod template; a message or field number not
 * described here is refused rather than guessed.
 */

/**
 * A field's type: a scalar, `time` (metav1.Time), `quantity`, `intOrString`,
 * `map<string>` / `map<bytes>` / `map<quantity>` (Go maps from string), or a
 * message name. `[]` before it makes a list.
 */
export type FieldType = string;

export interface FieldSpec {
  readonly name: string;
  readonly type: FieldType;
  /**
   * A Go pointer (or a slice or map): present only when set, so a zero value
   * that arrives is kept. Go's marshaller writes non-pointer scalars even when
   * zero; those zeros are dropped, as `omitempty` drops them in JSON.
   */
  readonly pointer?: boolean;
}

type Fields = Record<number, FieldSpec>;

const f = (name: string, type: FieldType, pointer = false): FieldSpec => ({ name, type, pointer });
const p = (name: string, type: FieldType): FieldSpec => f(name, type, true);

export const MESSAGES: Readonly<Record<string, Fields>> = {
  // runtime.TypeMeta, in the runtime.Unknown envelope after the `k8s\0` magic (1 typeMeta, 2 raw, 3 contentEncoding).
  TypeMeta: { 1: f('apiVersion', 'string'), 2: f('kind', 'string') },
  ObjectMeta: {
    1: f('name', 'string'),
    2: f('generateName', 'string'),
    3: f('namespace', 'string'),
    4: f('selfLink', 'string'),
    5: f('uid', 'string'),
    6: f('resourceVersion', 'string'),
    7: f('generation', 'int64'),
    8: f('creationTimestamp', 'time'),
    9: p('deletionTimestamp', 'time'),
    10: p('deletionGracePeriodSeconds', 'int64'),
    11: p('labels', 'map<string>'),
    12: p('annotations', 'map<string>'),
    13: p('ownerReferences', '[]OwnerReference'),
    14: p('finalizers', '[]string'),
  },
  OwnerReference: {
    5: f('apiVersion', 'string'),
    1: f('kind', 'string'),
    3: f('name', 'string'),
    4: f('uid', 'string'),
    6: p('controller', 'bool'),
    7: p('blockOwnerDeletion', 'bool'),
  },
  LabelSelector: { 1: p('matchLabels', 'map<string>'), 2: p('matchExpressions', '[]LabelSelectorRequirement') },
  LabelSelectorRequirement: { 1: f('key', 'string'), 2: f('operator', 'string'), 3: p('values', '[]string') },
  // core/v1
  Namespace: { 1: f('metadata', 'ObjectMeta'), 2: f('spec', 'NamespaceSpec'), 3: f('status', 'NamespaceStatus') },
  NamespaceSpec: { 1: p('finalizers', '[]string') },
  NamespaceStatus: { 1: f('phase', 'string') },
  ConfigMap: { 1: f('metadata', 'ObjectMeta'), 2: p('data', 'map<string>'), 3: p('binaryData', 'map<bytes>'), 4: p('immutable', 'bool') },
  Secret: {
    1: f('metadata', 'ObjectMeta'), 2: p('data', 'map<bytes>'), 3: f('type', 'string'), 4: p('stringData', 'map<string>'), 5: p('immutable', 'bool'),
  },
  ServiceAccount: {
    1: f('metadata', 'ObjectMeta'),
    2: p('secrets', '[]ObjectReference'),
    3: p('imagePullSecrets', '[]LocalObjectReference'),
    4: p('automountServiceAccountToken', 'bool'),
  },
  ObjectReference: {
    1: f('kind', 'string'),
    2: f('namespace', 'string'),
    3: f('name', 'string'),
    4: f('uid', 'string'),
    5: f('apiVersion', 'string'),
    6: f('resourceVersion', 'string'),
    7: f('fieldPath', 'string'),
  },
  LocalObjectReference: { 1: f('name', 'string') },
  // rbac.authorization.k8s.io/v1
  ClusterRole: { 1: f('metadata', 'ObjectMeta'), 2: p('rules', '[]PolicyRule'), 3: p('aggregationRule', 'AggregationRule') },
  Role: { 1: f('metadata', 'ObjectMeta'), 2: p('rules', '[]PolicyRule') },
  PolicyRule: {
    1: p('verbs', '[]string'),
    2: p('apiGroups', '[]string'),
    3: p('resources', '[]string'),
    4: p('resourceNames', '[]string'),
    5: p('nonResourceURLs', '[]string'),
  },
  AggregationRule: { 1: p('clusterRoleSelectors', '[]LabelSelector') },
  ClusterRoleBinding: { 1: f('metadata', 'ObjectMeta'), 2: p('subjects', '[]Subject'), 3: f('roleRef', 'RoleRef') },
  RoleBinding: { 1: f('metadata', 'ObjectMeta'), 2: p('subjects', '[]Subject'), 3: f('roleRef', 'RoleRef') },
  Subject: { 1: f('kind', 'string'), 2: f('apiGroup', 'string'), 3: f('name', 'string'), 4: f('namespace', 'string') },
  RoleRef: { 1: f('apiGroup', 'string'), 2: f('kind', 'string'), 3: f('name', 'string') },
  // apps/v1 and batch/v1, as `kubectl create deployment|job` fill them
  Deployment: { 1: f('metadata', 'ObjectMeta'), 2: f('spec', 'DeploymentSpec'), 3: f('status', 'DeploymentStatus') },
  DeploymentSpec: {
    1: p('replicas', 'int32'),
    2: p('selector', 'LabelSelector'),
    3: f('template', 'PodTemplateSpec'),
    4: f('strategy', 'DeploymentStrategy'),
    5: f('minReadySeconds', 'int32'),
    6: p('revisionHistoryLimit', 'int32'),
    7: f('paused', 'bool'),
    9: p('progressDeadlineSeconds', 'int32'),
  },
  DeploymentStrategy: { 1: f('type', 'string'), 2: p('rollingUpdate', 'RollingUpdateDeployment') },
  RollingUpdateDeployment: { 1: p('maxUnavailable', 'intOrString'), 2: p('maxSurge', 'intOrString') },
  DeploymentStatus: {
    1: f('observedGeneration', 'int64'),
    2: f('replicas', 'int32'),
    3: f('updatedReplicas', 'int32'),
    7: f('readyReplicas', 'int32'),
    4: f('availableReplicas', 'int32'),
    5: f('unavailableReplicas', 'int32'),
    9: p('terminatingReplicas', 'int32'),
    8: p('collisionCount', 'int32'),
  },
  Job: { 1: f('metadata', 'ObjectMeta'), 2: f('spec', 'JobSpec'), 3: f('status', 'JobStatus') },
  JobSpec: {
    1: p('parallelism', 'int32'),
    2: p('completions', 'int32'),
    3: p('activeDeadlineSeconds', 'int64'),
    7: p('backoffLimit', 'int32'),
    12: p('backoffLimitPerIndex', 'int32'),
    13: p('maxFailedIndexes', 'int32'),
    4: p('selector', 'LabelSelector'),
    5: p('manualSelector', 'bool'),
    6: f('template', 'PodTemplateSpec'),
    8: p('ttlSecondsAfterFinished', 'int32'),
    9: p('completionMode', 'string'),
    10: p('suspend', 'bool'),
    14: p('podReplacementPolicy', 'string'),
    15: p('managedBy', 'string'),
  },
  JobStatus: {
    2: p('startTime', 'time'),
    3: p('completionTime', 'time'),
    4: f('active', 'int32'),
    5: f('succeeded', 'int32'),
    6: f('failed', 'int32'),
    11: p('terminating', 'int32'),
    7: f('completedIndexes', 'string'),
    10: p('failedIndexes', 'string'),
    9: p('ready', 'int32'),
  },
  // core/v1 pod templates
  PodTemplateSpec: { 1: f('metadata', 'ObjectMeta'), 2: f('spec', 'PodSpec') },
  PodSpec: {
    1: p('volumes', '[]Volume'),
    20: p('initContainers', '[]Container'),
    2: p('containers', '[]Container'),
    3: f('restartPolicy', 'string'),
    4: p('terminationGracePeriodSeconds', 'int64'),
    5: p('activeDeadlineSeconds', 'int64'),
    6: f('dnsPolicy', 'string'),
    7: p('nodeSelector', 'map<string>'),
    8: f('serviceAccountName', 'string'),
    9: f('serviceAccount', 'string'),
    21: p('automountServiceAccountToken', 'bool'),
    10: f('nodeName', 'string'),
    11: f('hostNetwork', 'bool'),
    12: f('hostPID', 'bool'),
    13: f('hostIPC', 'bool'),
    27: p('shareProcessNamespace', 'bool'),
    14: p('securityContext', 'PodSecurityContext'),
    15: p('imagePullSecrets', '[]LocalObjectReference'),
    16: f('hostname', 'string'),
    17: f('subdomain', 'string'),
    18: p('affinity', 'Affinity'),
    19: f('schedulerName', 'string'),
    22: p('tolerations', '[]Toleration'),
    24: f('priorityClassName', 'string'),
    25: p('priority', 'int32'),
    29: p('runtimeClassName', 'string'),
    30: p('enableServiceLinks', 'bool'),
    31: p('preemptionPolicy', 'string'),
    35: p('setHostnameAsFQDN', 'bool'),
    37: p('hostUsers', 'bool'),
  },
  Container: {
    1: f('name', 'string'),
    2: f('image', 'string'),
    3: p('command', '[]string'),
    4: p('args', '[]string'),
    5: f('workingDir', 'string'),
    6: p('ports', '[]ContainerPort'),
    19: p('envFrom', '[]EnvFromSource'),
    7: p('env', '[]EnvVar'),
    8: f('resources', 'ResourceRequirements'),
    24: p('restartPolicy', 'string'),
    9: p('volumeMounts', '[]VolumeMount'),
    10: p('livenessProbe', 'Probe'),
    11: p('readinessProbe', 'Probe'),
    22: p('startupProbe', 'Probe'),
    12: p('lifecycle', 'Lifecycle'),
    13: f('terminationMessagePath', 'string'),
    20: f('terminationMessagePolicy', 'string'),
    14: f('imagePullPolicy', 'string'),
    15: p('securityContext', 'SecurityContext'),
    16: f('stdin', 'bool'),
    17: f('stdinOnce', 'bool'),
    18: f('tty', 'bool'),
  },
  ContainerPort: { 1: f('name', 'string'), 2: f('hostPort', 'int32'), 3: f('containerPort', 'int32'), 4: f('protocol', 'string'), 5: f('hostIP', 'string') },
  EnvVar: { 1: f('name', 'string'), 2: f('value', 'string'), 3: p('valueFrom', 'EnvVarSource') },
  ResourceRequirements: { 1: p('limits', 'map<quantity>'), 2: p('requests', 'map<quantity>') },
  Toleration: { 1: f('key', 'string'), 2: f('operator', 'string'), 3: f('value', 'string'), 4: f('effect', 'string'), 5: p('tolerationSeconds', 'int64') },
  // apimachinery value types
  Time: { 1: f('seconds', 'int64'), 2: f('nanos', 'int32') },
  Quantity: { 1: f('string', 'string') },
  IntOrString: { 1: f('type', 'int64'), 2: f('intVal', 'int32'), 3: f('strVal', 'string') },
};

/** Kinds whose protobuf bodies are decoded, by `apiVersion/kind`; the message is the kind. */
export const DECODED_KINDS: ReadonlySet<string> = new Set([
  'v1/Namespace', 'v1/ConfigMap', 'v1/Secret', 'v1/ServiceAccount',
  'rbac.authorization.k8s.io/v1/ClusterRole', 'rbac.authorization.k8s.io/v1/Role',
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding', 'rbac.authorization.k8s.io/v1/RoleBinding',
  'apps/v1/Deployment', 'batch/v1/Job',
]);
