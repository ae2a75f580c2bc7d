/** How fast the construct synthesizes a large stack in process. */
import { performance } from 'node:perf_hooks';
import { Chart, Testing } from 'cdk8s';
import { LocalVolumeProvisioner, VolumeMode } from '../../src/constructs';
import { millis, percentile, row } from '../table';

export function synthesis(): void {
  const synth = () => {
    const chart = new Chart(Testing.app(), 'bench');
    new LocalVolumeProvisioner(chart, 'lvp', {
      storageClasses: Array.from({ length: 20 }, (_, i) => ({ name: `class-${i}`, hostDir: `/mnt/class-${i}`, volumeMode: i % 2 ? VolumeMode.BLOCK : VolumeMode.FILESYSTEM })),
    });
    return Testing.synth(chart).length;
  };
  const t0 = performance.now();
  synth();
  const cold = performance.now() - t0;
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    synth();
    times.push(performance.now() - t);
  }
  row('Synthesis of a 20-class stack (cdk8s, in process, modules loaded), first', millis(cold));
  row('Synthesis of a 20-class stack (cdk8s, in process, modules loaded), median of the next 5', millis(percentile(times, 50)));
}
