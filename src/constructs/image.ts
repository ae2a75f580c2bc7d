import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Repository of the image that image/Dockerfile builds. */
export const IMAGE_REPOSITORY = 'ghcr.io/local-volume-provisioner/local-volume-provisioner';

/**
 * The package version, read from package.json at load time: two levels up from
 * src/constructs (ts-node, jest: the repository's) and from lib/constructs (compiled:
 * the construct library's, construct-library/). .projenrc.ts gives both one version.
 */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The construct's default image: built from image/Dockerfile, tagged with the package version. */
export const DEFAULT_IMAGE = `${IMAGE_REPOSITORY}:${packageVersion()}`;
