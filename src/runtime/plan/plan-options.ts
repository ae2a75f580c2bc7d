/** What `makePlan` and `formatPlan` need. */
export interface PlanOptions {
  /** A provisioner ConfigMap as a directory (one file per key). */
  readonly configDir: string;
  /** A PV spec ConfigMap as a directory; when set, the device dialect is planned instead. */
  readonly pvSpecDir: string;
  readonly nodeName: string;
  readonly output: 'table' | 'json' | 'yaml';
}
