import { errorsOf, valid, warningsOf } from './helpers';
import { parseProvisionerConfig, PROVISIONER_DEFAULTS } from '../../src/config';

/** A storageClassMap value with one class; `extra` lines are indented into it. */
function oneClass(...extra: string[]): string {
  return ['fast-disks:', '  hostDir: /mnt/fast-disks', '  mountDir: /mnt/fast-disks', ...extra.map((l) => `  ${l}`)].join('\n');
}

describe('directory dialect defaults', () => {
  test('a class with only hostDir and mountDir gets upstream defaults', () => {
    const config = valid(parseProvisionerConfig({ storageClassMap: oneClass() }));
    expect(config.storageClassMap['fast-disks']).toEqual({
      hostDir: '/mnt/fast-disks',
      mountDir: '/mnt/fast-disks',
      blockCleanerCommand: ['/scripts/quick_reset.sh'],
      volumeMode: 'Filesystem',
      accessMode: 'ReadWriteOnce',
      fsType: '',
      namePattern: '*',
      selector: [],
    });
  });

  test('every top-level key has its upstream default, and our extension keys theirs', () => {
    const config = valid(parseProvisionerConfig({ storageClassMap: oneClass() }));
    expect({ ...config, storageClassMap: {} }).toEqual({
      storageClassMap: {},
      nodeLabelsForPV: [],
      labelsForPV: {},
      useAlphaAPI: false,
      useJobForCleaning: false,
      jobTolerations: [],
      minResyncPeriod: 300_000,
      useNodeNameOnly: false,
      setPVOwnerRef: false,
      removeNodeNotReadyTaint: false,
      provisionerNotReadyNodeTaintKey: '',
      cleanupTimeout: 0,
      cleanupStallTimeout: 600_000,
      maxConcurrentCleanups: 2,
      missingVolumeGracePeriod: 300_000,
      deleteMissingReleasedVolumes: false,
    });
  });

  test('an empty ConfigMap is valid, with a warning that nothing will be provisioned', () => {
    const result = parseProvisionerConfig({});
    expect(valid(result)).toEqual(PROVISIONER_DEFAULTS);
    expect(warningsOf(result)).toEqual(['storageClassMap: is missing, so no storage class is configured and nothing will be provisioned']);
  });

  test('an empty namePattern means the default "*", as upstream', () => {
    expect(valid(parseProvisionerConfig({ storageClassMap: oneClass('namePattern: ""') })).storageClassMap['fast-disks'].namePattern).toBe('*');
  });

  test('a null blockCleanerCommand means the default, as a YAML null is Go nil', () => {
    expect(valid(parseProvisionerConfig({ storageClassMap: oneClass('blockCleanerCommand:') })).storageClassMap['fast-disks'].blockCleanerCommand)
      .toEqual(['/scripts/quick_reset.sh']);
  });

  test('resolved configs do not share default arrays', () => {
    const a = valid(parseProvisionerConfig({ storageClassMap: oneClass() }));
    (a.nodeLabelsForPV as string[]).push('x');
    (a.storageClassMap['fast-disks'].blockCleanerCommand as string[]).push('y');
    const b = valid(parseProvisionerConfig({ storageClassMap: oneClass() }));
    expect(b.nodeLabelsForPV).toEqual([]);
    expect(b.storageClassMap['fast-disks'].blockCleanerCommand).toEqual(['/scripts/quick_reset.sh']);
  });
});

describe('directory dialect values are YAML 1.1, as go-yaml v2 reads them', () => {
  test.each([
    ['yes', true], ['Yes', true], ['YES', true], ['on', true], ['y', true], ['true', true], ['True', true],
    ['no', false], ['off', false], ['n', false], ['false', false], ['FALSE', false],
  ])('useJobForCleaning: %s is %s', (text, expected) => {
    expect(valid(parseProvisionerConfig({ storageClassMap: oneClass(), useJobForCleaning: text })).useJobForCleaning).toBe(expected);
  });

  test('a quoted "yes" is accepted as the boolean it spells', () => {
    expect(valid(parseProvisionerConfig({ storageClassMap: oneClass(), setPVOwnerRef: '"yes"' })).setPVOwnerRef).toBe(true);
  });

  test('a value that is not a boolean is an error naming the key', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass(), useNodeNameOnly: 'maybe' })))
      .toEqual(['useNodeNameOnly: "maybe" is not a boolean (true/false, yes/no, on/off)']);
  });

  test('minResyncPeriod: 1h30m is 90 minutes', () => {
    expect(valid(parseProvisionerConfig({ storageClassMap: oneClass(), minResyncPeriod: '1h30m' })).minResyncPeriod).toBe(5_400_000);
  });

  test('extension durations are Go durations too', () => {
    const config = valid(parseProvisionerConfig({
      storageClassMap: oneClass(),
      cleanupTimeout: '2h',
      missingVolumeGracePeriod: '90s',
      maxConcurrentCleanups: '4',
      deleteMissingReleasedVolumes: 'yes',
    }));
    expect(config).toMatchObject({
      cleanupTimeout: 7_200_000, missingVolumeGracePeriod: 90_000, maxConcurrentCleanups: 4, deleteMissingReleasedVolumes: true,
    });
  });

  test('a YAML syntax error names the key and the line', () => {
    const result = parseProvisionerConfig({ storageClassMap: 'fast-disks:\n  hostDir: /mnt/a\n  mountDir: [/mnt/a\n', useNodeNameOnly: 'true' });
    const errors = errorsOf(result);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^storageClassMap: YAML syntax error at line \d+, column \d+: /);
    expect(warningsOf(result)).toEqual([]);
  });

  test('a duplicate class is an error, not a silent override', () => {
    const doubled = `${oneClass()}\nfast-disks:\n  hostDir: /mnt/b\n  mountDir: /mnt/b\n`;
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: doubled }))).toEqual([
      'storageClassMap.fast-disks: is given twice in one map; the last value is used, as the Go provisioner reads it',
    ]);
  });

  test('a number or boolean where text is expected is used as text, with a warning', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass(), labelsForPV: 'tier: 1\nssd: yes\n' });
    expect(valid(result).labelsForPV).toEqual({ tier: '1', ssd: 'true' });
    expect(warningsOf(result)).toEqual([
      'labelsForPV.tier: 1 was read as a YAML number and is used as the text "1"; quote it to keep it as written',
      'labelsForPV.ssd: true was read as a YAML boolean and is used as the text "true"; quote it to keep it as written',
    ]);
  });

  test('timestamps and sexagesimal numbers stay text, as go-yaml v2 leaves them', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass('blockCleanerCommand: [/scripts/x.sh, 2024-01-02, 12:30]') });
    expect(valid(result).storageClassMap['fast-disks'].blockCleanerCommand).toEqual(['/scripts/x.sh', '2024-01-02', '12:30']);
  });

  test('nodeLabelsForPV and labelsForPV are read', () => {
    const config = valid(parseProvisionerConfig({
      storageClassMap: oneClass(),
      nodeLabelsForPV: '- kubernetes.io/hostname\n- topology.kubernetes.io/zone\n',
      labelsForPV: 'team: storage\nexample.com/tier: fast\n',
    }));
    expect(config.nodeLabelsForPV).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    expect(config.labelsForPV).toEqual({ 'team': 'storage', 'example.com/tier': 'fast' });
  });

  test('useAlphaAPI is accepted and warned about, since upstream removed it', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass(), useAlphaAPI: 'true' });
    expect(valid(result).useAlphaAPI).toBe(true);
    expect(warningsOf(result)).toEqual(['useAlphaAPI: the alpha node-affinity annotation was removed upstream; PVs get spec.nodeAffinity as usual']);
  });

  test('removeNodeNotReadyTaint with its taint key is read', () => {
    const config = valid(parseProvisionerConfig({
      storageClassMap: oneClass(), removeNodeNotReadyTaint: 'true', provisionerNotReadyNodeTaintKey: 'example.com/storage-not-ready',
    }));
    expect(config).toMatchObject({ removeNodeNotReadyTaint: true, provisionerNotReadyNodeTaintKey: 'example.com/storage-not-ready' });
  });
});

describe('selector', () => {
  test('node selector terms are read with matchExpressions and matchFields', () => {
    const config = valid(parseProvisionerConfig({
      storageClassMap: oneClass(
        'selector:',
        '  - matchExpressions:',
        '      - key: topology.kubernetes.io/zone',
        '        operator: In',
        '        values: [zone-a, zone-b]',
        '      - key: example.com/shared-disk',
        '        operator: Exists',
        '  - matchFields:',
        '      - key: metadata.name',
        '        operator: NotIn',
        '        values: [node-9]',
        '  - matchExpressions:',
        '      - key: example.com/disks',
        '        operator: Gt',
        '        values: ["3"]',
      ),
    }));
    expect(config.storageClassMap['fast-disks'].selector).toEqual([
      {
        matchExpressions: [
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a', 'zone-b'] },
          { key: 'example.com/shared-disk', operator: 'Exists' },
        ],
      },
      { matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node-9'] }] },
      { matchExpressions: [{ key: 'example.com/disks', operator: 'Gt', values: ['3'] }] },
    ]);
  });

  test('a bad operator names the term, the requirement and the allowed operators', () => {
    const result = parseProvisionerConfig({
      storageClassMap: oneClass('selector:', '  - matchExpressions:', '      - key: zone', '        operator: Equals', '        values: [a]'),
    });
    expect(errorsOf(result)).toEqual([
      'storageClassMap.fast-disks.selector[0].matchExpressions[0].operator: "Equals" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt',
    ]);
  });

  test.each([
    [['- key: zone', '  operator: In'], 'matchExpressions[0].values: must not be empty for In'],
    [['- key: zone', '  operator: Exists', '  values: [a]'], 'matchExpressions[0].values: must be empty for Exists'],
    [['- key: disks', '  operator: Lt', '  values: [many]'], 'matchExpressions[0].values: must hold exactly one integer for Lt'],
    [['- key: -zone-', '  operator: Exists'], 'matchExpressions[0].key: "-zone-" must be a qualified name'],
    [['- operator: Exists'], 'matchExpressions[0].key: is required'],
    [['- key: zone'], 'matchExpressions[0].operator: is required (one of In, NotIn, Exists, DoesNotExist, Gt, Lt)'],
  ])('requirement %j is rejected: %s', (lines, expected) => {
    const result = parseProvisionerConfig({
      storageClassMap: oneClass('selector:', '  - matchExpressions:', ...lines.map((l) => `    ${l}`)),
    });
    expect(errorsOf(result)).toEqual([expect.stringContaining(`storageClassMap.fast-disks.selector[0].${expected}`)]);
  });

  test('matchFields only takes metadata.name with In or NotIn and one value', () => {
    const result = parseProvisionerConfig({
      storageClassMap: oneClass(
        'selector:', '  - matchFields:',
        '    - {key: spec.unschedulable, operator: In, values: ["true"]}',
        '    - {key: metadata.name, operator: Exists}',
        '    - {key: metadata.name, operator: In, values: [a, b]}',
      ),
    });
    expect(errorsOf(result)).toEqual([
      'storageClassMap.fast-disks.selector[0].matchFields[0].key: "spec.unschedulable" is not a supported field (only metadata.name)',
      'storageClassMap.fast-disks.selector[0].matchFields[1].operator: "Exists" is not one of In, NotIn (the only operators for matchFields)',
      'storageClassMap.fast-disks.selector[0].matchFields[2].values: must hold exactly one value for In in matchFields',
    ]);
  });

  test('an empty term is a warning: it matches no node', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass('selector:', '  - {}') });
    expect(valid(result).storageClassMap['fast-disks'].selector).toEqual([{}]);
    expect(warningsOf(result)).toEqual(['storageClassMap.fast-disks.selector[0]: has no matchExpressions or matchFields, so it matches no node']);
  });
});

describe('jobTolerations', () => {
  test('tolerations are read field by field', () => {
    const config = valid(parseProvisionerConfig({
      storageClassMap: oneClass(),
      jobTolerations: [
        '- key: node-role.kubernetes.io/storage',
        '  operator: Equal',
        '  value: "true"',
        '  effect: NoSchedule',
        '- operator: Exists',
        '- key: example.com/draining',
        '  operator: Exists',
        '  effect: NoExecute',
        '  tolerationSeconds: 300',
      ].join('\n'),
    }));
    expect(config.jobTolerations).toEqual([
      { key: 'node-role.kubernetes.io/storage', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
      { operator: 'Exists' },
      { key: 'example.com/draining', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ]);
  });

  test('invalid tolerations are reported with the API server rules', () => {
    const result = parseProvisionerConfig({
      storageClassMap: oneClass(),
      jobTolerations: [
        '- value: x', // no key needs Exists
        '- {key: a, operator: Exists, value: x}',
        '- {key: a, effect: NoSchedule, tolerationSeconds: 5}',
        '- {key: a, effect: Sometimes}',
      ].join('\n'),
    });
    expect(errorsOf(result)).toEqual([
      'jobTolerations[0].operator: must be Exists when key is empty (a toleration of every taint)',
      'jobTolerations[1].value: must be empty when operator is Exists',
      'jobTolerations[2].tolerationSeconds: is only allowed with effect NoExecute',
      'jobTolerations[3].effect: "Sometimes" is not one of NoSchedule, PreferNoSchedule, NoExecute',
    ]);
  });
});

describe('directory dialect errors', () => {
  test('a bad volumeMode names class and field and what is expected', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass('volumeMode: block') })))
      .toEqual(['storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block']);
  });

  test('a missing hostDir is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: 'fast-disks:\n  mountDir: /mnt/fast-disks\n' })))
      .toEqual(['storageClassMap.fast-disks.hostDir: is required (the directory of this class on the host; it prefixes spec.local.path)']);
  });

  test('a missing mountDir is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: 'fast-disks:\n  hostDir: /mnt/fast-disks\n' })))
      .toEqual(['storageClassMap.fast-disks.mountDir: is required (the same directory as mounted in the provisioner container; it is what gets scanned)']);
  });

  test('an empty hostDir counts as missing, as upstream', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: 'fast-disks:\n  hostDir: ""\n  mountDir: /m\n' })))
      .toEqual([expect.stringMatching(/^storageClassMap\.fast-disks\.hostDir: is required/)]);
  });

  test('relative hostDir and mountDir are errors', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: 'fast-disks:\n  hostDir: mnt/fast\n  mountDir: ./fast\n' }))).toEqual([
      'storageClassMap.fast-disks.hostDir: "mnt/fast" is not an absolute path',
      'storageClassMap.fast-disks.mountDir: "./fast" is not an absolute path',
    ]);
  });

  test('an empty blockCleanerCommand is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass('blockCleanerCommand: []') })))
      .toEqual(['storageClassMap.fast-disks.blockCleanerCommand: must not be empty (the command run to clean a Block volume; omit the key for ["/scripts/quick_reset.sh"])']);
  });

  test('a blockCleanerCommand that is not a list is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass('blockCleanerCommand: /scripts/shred.sh 2') })))
      .toEqual(['storageClassMap.fast-disks.blockCleanerCommand: expected a list, got "/scripts/shred.sh 2"']);
  });

  test('a malformed namePattern glob is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass('namePattern: "sd*,[a-"') })))
      .toEqual(['storageClassMap.fast-disks.namePattern: glob "[a-" is malformed (malformed character class)']);
  });

  test('a namePattern with spaces after commas is a warning', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass('namePattern: "sd*, nvme*"') });
    expect(valid(result).storageClassMap['fast-disks'].namePattern).toBe('sd*, nvme*');
    expect(warningsOf(result)).toEqual(['storageClassMap.fast-disks.namePattern: "sd*, nvme*" has spaces around a glob; they are part of the glob, as upstream reads it']);
  });

  test.each(['5 minutes', '10', '1d'])('minResyncPeriod %j is an error', (text) => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass(), minResyncPeriod: text })))
      .toEqual([expect.stringMatching(/^minResyncPeriod: .* is not a non-negative Go duration such as 5m0s, 1h30m, 300ms or 1.5h$/)]);
  });

  test('a negative minResyncPeriod is an error, which the Go provisioner accepts', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass(), minResyncPeriod: '-5m' })))
      .toEqual(['minResyncPeriod: "-5m" is negative (the agent uses the default 5m0s)']);
  });

  test('fsType with volumeMode Block is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass('volumeMode: Block', 'fsType: ext4') })))
      .toEqual(['storageClassMap.fast-disks.fsType: "ext4" is not allowed with volumeMode Block (a raw block volume has no filesystem)']);
  });

  test('fsType with volumeMode Filesystem is accepted (kubelet formats block devices with it)', () => {
    expect(valid(parseProvisionerConfig({ storageClassMap: oneClass('fsType: xfs') })).storageClassMap['fast-disks'].fsType).toBe('xfs');
  });

  test('a bad accessMode is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass('accessMode: RWO') })))
      .toEqual(['storageClassMap.fast-disks.accessMode: "RWO" is not one of ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod']);
  });

  test('a StorageClass name that is not a DNS subdomain is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: 'Fast_Disks:\n  hostDir: /a\n  mountDir: /a\n' })))
      .toEqual([expect.stringMatching(/^storageClassMap\.Fast_Disks: "Fast_Disks" is not a valid StorageClass name: it must be a DNS subdomain/)]);
  });

  test('two classes with one mountDir is an error on the second', () => {
    const classes = 'fast:\n  hostDir: /mnt/disks\n  mountDir: /mnt/disks\nslow:\n  hostDir: /mnt/disks\n  mountDir: /mnt/disks/\n';
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: classes })))
      .toEqual(['storageClassMap.slow.mountDir: "/mnt/disks/" is also the mountDir of class fast; each class needs its own directory']);
  });

  test('removeNodeNotReadyTaint without a taint key is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass(), removeNodeNotReadyTaint: 'true' })))
      .toEqual(['provisionerNotReadyNodeTaintKey: is required when removeNodeNotReadyTaint is true (the key of the taint to remove)']);
  });

  test('invalid label keys and values are errors', () => {
    expect(errorsOf(parseProvisionerConfig({
      storageClassMap: oneClass(),
      nodeLabelsForPV: '- "bad key"\n',
      labelsForPV: `ok: "${'v'.repeat(64)}"\n`,
    }))).toEqual([
      expect.stringMatching(/^nodeLabelsForPV\[0\]: "bad key" must be a qualified name/),
      'labelsForPV.ok: "' + 'v'.repeat(64) + '" must be at most 63 characters (the agent leaves the label off: the API server would refuse every PV with it)',
    ]);
  });

  test('maxConcurrentCleanups below 1 is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: oneClass(), maxConcurrentCleanups: '0' })))
      .toEqual(['maxConcurrentCleanups: 0 is not a whole number of at least 1']);
  });

  test('a class entry that is not a map is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: 'fast-disks: /mnt/fast-disks\n' })))
      .toEqual(['storageClassMap.fast-disks: expected a map, got "/mnt/fast-disks"']);
  });

  test('a storageClassMap that is not a map is an error', () => {
    expect(errorsOf(parseProvisionerConfig({ storageClassMap: '- fast-disks\n' })))
      .toEqual(['storageClassMap: expected a map of StorageClass name to class entry, got a list']);
  });

  test('every problem is reported at once', () => {
    const result = parseProvisionerConfig({
      storageClassMap: [
        'fast-disks:',
        '  hostDir: /mnt/fast',
        '  volumeMode: block',
        '  blockCleanerCommand: []',
        'slow-disks:',
        '  hostDir: slow',
        '  mountDir: /mnt/slow',
        '  namePattern: "[a-"',
      ].join('\n'),
      minResyncPeriod: 'soon',
      useNodeNameOnly: 'perhaps',
      nodeLabelForPV: '- a',
    });
    expect(errorsOf(result)).toEqual([
      'storageClassMap.fast-disks.mountDir: is required (the same directory as mounted in the provisioner container; it is what gets scanned)',
      'storageClassMap.fast-disks.blockCleanerCommand: must not be empty (the command run to clean a Block volume; omit the key for ["/scripts/quick_reset.sh"])',
      'storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block',
      'storageClassMap.slow-disks.hostDir: "slow" is not an absolute path',
      'storageClassMap.slow-disks.namePattern: glob "[a-" is malformed (malformed character class)',
      'minResyncPeriod: "soon" is not a non-negative Go duration such as 5m0s, 1h30m, 300ms or 1.5h',
      'useNodeNameOnly: "perhaps" is not a boolean (true/false, yes/no, on/off)',
    ]);
    expect(warningsOf(result)).toEqual(['nodeLabelForPV: is not a known key and is ignored; did you mean nodeLabelsForPV?']);
  });
});

describe('unknown keys', () => {
  test('an unknown top-level key is a warning, not silence', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass(), enableFancyMode: 'true' });
    expect(valid(result)).toBeDefined();
    expect(warningsOf(result)).toEqual(['enableFancyMode: is not a known key and is ignored']);
  });

  test('an unknown class field is a warning with a suggestion', () => {
    const result = parseProvisionerConfig({ storageClassMap: oneClass('namePatern: "sd*"') });
    expect(valid(result).storageClassMap['fast-disks'].namePattern).toBe('*');
    expect(warningsOf(result)).toEqual(['storageClassMap.fast-disks.namePatern: is not a known key and is ignored; did you mean namePattern?']);
  });

  test('a key in the wrong case is used, as upstream matches keys case-insensitively, with a warning', () => {
    const result = parseProvisionerConfig({ storageClassMap: 'fast-disks:\n  hostdir: /mnt/a\n  MountDir: /mnt/a\n', usenodenameonly: 'true' });
    const config = valid(result);
    expect(config.useNodeNameOnly).toBe(true);
    expect(config.storageClassMap['fast-disks']).toMatchObject({ hostDir: '/mnt/a', mountDir: '/mnt/a' });
    expect(warningsOf(result)).toEqual([
      'usenodenameonly: is read as useNodeNameOnly (keys match case-insensitively, as upstream); spell it useNodeNameOnly',
      'storageClassMap.fast-disks.hostdir: is read as hostDir (keys match case-insensitively, as upstream); spell it hostDir',
      'storageClassMap.fast-disks.MountDir: is read as mountDir (keys match case-insensitively, as upstream); spell it mountDir',
    ]);
  });
});

describe('class directories', () => {
  test('a mountDir inside another class\'s mountDir is a warning when that class\'s namePattern admits it', () => {
    const classes = 'outer:\n  hostDir: /mnt/disks\n  mountDir: /mnt/disks\ninner:\n  hostDir: /mnt/disks/ssd\n  mountDir: /mnt/disks/ssd\n';
    const result = parseProvisionerConfig({ storageClassMap: classes });
    valid(result);
    expect(warningsOf(result)).toEqual([
      'storageClassMap.inner.mountDir: "/mnt/disks/ssd" is inside the mountDir of class outer, whose namePattern admits the entry "ssd"; class outer may make a PV of it',
    ]);
  });

  test('a nested mountDir the outer namePattern excludes is fine', () => {
    const classes = 'outer:\n  hostDir: /mnt/disks\n  mountDir: /mnt/disks\n  namePattern: "disk*"\ninner:\n  hostDir: /mnt/disks/ssd\n  mountDir: /mnt/disks/ssd\n';
    expect(warningsOf(parseProvisionerConfig({ storageClassMap: classes }))).toEqual([]);
  });
});
