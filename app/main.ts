import { App, Chart, Duration } from 'cdk8s';
import { Construct } from 'constructs';
import { LocalVolumeProvisioner } from '../src/constructs';

/**
 * The example app: `npx projen synth` writes dist/local-volume-provisioner.k8s.yaml.
 *
 * One class of Filesystem volumes: every filesystem mounted under /mnt/fast-disks/<name>
 * on a node becomes a PV of StorageClass `fast-disks`. Metrics are scraped through a
 * ServiceMonitor (the prometheus-operator CRDs must be installed to apply it).
 * No `image` is given, so synth warns that the default one must be built and pushed
 * first: add `image: '<your registry>/local-volume-provisioner:<tag>'` once it is.
 */
export class ExampleChart extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id);
    new LocalVolumeProvisioner(this, 'provisioner', {
      storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }],
      serviceMonitor: { interval: Duration.seconds(30) },
    });
  }
}

const app = new App();
new ExampleChart(app, 'local-volume-provisioner');
app.synth();
