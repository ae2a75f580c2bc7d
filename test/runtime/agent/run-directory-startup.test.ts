import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runDirectoryProvisioner } from '../../../src/runtime/agent/run-directory';
import { parseCommandLine } from '../../../src/runtime/cli/commands';
import { StartupError } from '../../../src/runtime/startup-error';

function runOptions(dir: string, env: NodeJS.ProcessEnv = {}) {
  const out = parseCommandLine(['run', '--config-dir', dir, '--listen-address', '127.0.0.1:0'], { MY_NODE_NAME: 'node-1', ...env });
  if (out.kind !== 'options' || out.options.command !== 'run') throw new Error('bad test options');
  return out.options;
}

function configDir(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-startup-'));
  for (const [k, v] of Object.entries(files)) fs.writeFileSync(path.join(dir, k), v);
  return dir;
}

const CLASS = 'fast:\n  hostDir: /mnt/fast\n  mountDir: /mnt/fast\n';

describe('run refuses to start, before touching the cluster, when', () => {
  test('the config directory is missing, saying where to mount it', async () => {
    await expect(runDirectoryProvisioner(runOptions('/nonexistent/provisioner/config'))).rejects.toThrow(
      /provisioner ConfigMap in \/nonexistent\/provisioner\/config cannot be read .*mount the provisioner ConfigMap there or pass --config-dir/,
    );
  });

  test('the config is invalid, naming every problem', async () => {
    const dir = configDir({ storageClassMap: `${CLASS}  volumeMode: block\n`, minResyncPeriod: 'soon' });
    const run = runDirectoryProvisioner(runOptions(dir));
    await expect(run).rejects.toBeInstanceOf(StartupError);
    await expect(run).rejects.toThrow(/storageClassMap\.fast\.volumeMode: "block" is not one of Filesystem, Block[\s\S]*minResyncPeriod/);
  });

  test('Job cleaning is on without JOB_CONTAINER_IMAGE', async () => {
    const dir = configDir({ storageClassMap: CLASS, useJobForCleaning: 'true' });
    await expect(runDirectoryProvisioner(runOptions(dir))).rejects.toThrow('set JOB_CONTAINER_IMAGE');
  });
});
