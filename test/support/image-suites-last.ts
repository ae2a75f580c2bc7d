/**
 * Jest's test order (failed first, then slowest first), except that the suites
 * under test/image and test/node run last: they need the container image, which the
 * test task builds in the background meanwhile (scripts/with-image-build.sh).
 *
 * Jest loads this file with Node's own TypeScript support, not ts-jest, so it
 * uses only syntax Node can strip.
 */
import Sequencer from '@jest/test-sequencer';

type Tests = Parameters<Sequencer['sort']>[0];

const IMAGE_SUITES = ['/test/image/', '/test/node/'];

export default class ImageSuitesLast extends Sequencer {
  override async sort(tests: Tests): Promise<Tests> {
    const sorted = await super.sort(tests);
    const needsImage = (t: Tests[number]) => IMAGE_SUITES.some((dir) => t.path.includes(dir));
    return [...sorted.filter((t) => !needsImage(t)), ...sorted.filter(needsImage)];
  }
}
