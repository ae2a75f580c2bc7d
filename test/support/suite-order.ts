/**
 * Jest's test order (failed first, then slowest first), except:
 * - the node suites (test/node) start first: each runs for most of the test task, its VM
 *   (qemu) taking about one core while the other workers run every other suite beside it;
 *   they wait in their beforeAll for the container image, which the test task builds in
 *   the background meanwhile (scripts/with-image-build.sh), a half-minute with warm caches;
 * - the image suites (test/image) run last, when the image is long built.
 *
 * Jest loads this file with Node's own TypeScript support, not ts-jest, so it
 * uses only syntax Node can strip.
 */
import Sequencer from '@jest/test-sequencer';

type Tests = Parameters<Sequencer['sort']>[0];

const under = (dir: string) => (t: Tests[number]) => t.path.includes(dir);
const isNodeSuite = under('/test/node/');
const isImageSuite = under('/test/image/');

export default class SuiteOrder extends Sequencer {
  override async sort(tests: Tests): Promise<Tests> {
    const sorted = await super.sort(tests);
    return [
      ...sorted.filter(isNodeSuite),
      ...sorted.filter((t) => !isNodeSuite(t) && !isImageSuite(t)),
      ...sorted.filter(isImageSuite),
    ];
  }
}
