import { App, Chart, Testing } from 'cdk8s';
import { DEFAULTS } from './stacks';
import { DEFAULT_IMAGE, LocalVolumeProvisioner, LocalVolumeProvisionerProps } from '../../src/constructs';

/**
 * The default image is built from image/Dockerfile but published nowhere, so pods that
 * use it never start: synth says so, naming the `image` prop, and goes on.
 */
let warn: jest.SpyInstance;
beforeEach(() => {
  warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
});
afterEach(() => warn.mockRestore());

/** Synthesizes an app (validations included, as `cdk8s synth` does); returns what was warned. */
function warningsOfSynth(props: LocalVolumeProvisionerProps): string[] {
  const app: App = Testing.app();
  new LocalVolumeProvisioner(new Chart(app, 'storage'), 'provisioner', props);
  app.synthYaml();
  return warn.mock.calls.map((c) => String(c[0]));
}

test('synth warns once that the default image is not published, naming the image prop', () => {
  expect(warningsOfSynth(DEFAULTS)).toEqual([
    `Warning: LocalVolumeProvisioner storage/provisioner: image: not given, so the pods use ${DEFAULT_IMAGE}, which is not published; `
    + 'build it (image/Dockerfile), push it to a registry your nodes pull from and pass that reference as the image prop '
    + '(pass DEFAULT_IMAGE to keep this name on purpose)',
  ]);
});

test('an image given, even the default one on purpose, is not warned about', () => {
  expect(warningsOfSynth({ ...DEFAULTS, image: 'registry.example.com/lvp:1.0.0' })).toEqual([]);
  expect(warningsOfSynth({ ...DEFAULTS, image: DEFAULT_IMAGE })).toEqual([]);
});

test('the warning does not stop synth', () => {
  const app: App = Testing.app();
  new LocalVolumeProvisioner(new Chart(app, 'storage'), 'provisioner', DEFAULTS);
  expect(app.synthYaml()).toContain(`image: ${DEFAULT_IMAGE}`);
});
