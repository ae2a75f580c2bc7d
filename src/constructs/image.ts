import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Repository of the image that image/Dockerfile builds. */
export const IMAGE_REPOSITORY = 'ghcr.io/local-volume-provisioner/local-volume-provisioner';

/**
 * The package version, read from package.json at load time: the same file sits two
 * levels up from both src/constructs (ts-node, jest) and lib/constructs (compiled).
 */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The construct's default image: built from image/Dockerfile, tagged with the package version. */
export const DEFAULT_IMAGE = `${IMAGE_REPOSITORY}:${packageVersion()}`;
