/**
 * A watched copy of one kind of object (client-node's informer), for tests and the bench to
 * read synchronously and poll cheaply: a watch the server ends (its timeout, a restart) is
 * started again until stop().
 */
import { Informer, KubeConfig, KubernetesListObject, KubernetesObject, makeInformer, ObjectCache } from '@kubernetes/client-node';

export class Watched<T extends KubernetesObject> {
  /** Lists, then watches, `watchPath` (e.g. /api/v1/persistentvolumes); resolves once the list is in. */
  static async start<T extends KubernetesObject>(kc: KubeConfig, watchPath: string,
    list: () => Promise<KubernetesListObject<T>>): Promise<Watched<T>> {
    const w = new Watched<T>(makeInformer(kc, watchPath, list));
    await w.informer.start();
    return w;
  }

  private stopped = false;

  private constructor(private readonly informer: Informer<T> & ObjectCache<T>) {
    informer.on('error', () => setTimeout(() => this.stopped || informer.start().catch(() => {}), 500));
  }

  get(name: string, namespace?: string): T | undefined {
    return this.informer.get(name, namespace);
  }

  list(namespace?: string): T[] {
    return [...this.informer.list(namespace)];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }
}
