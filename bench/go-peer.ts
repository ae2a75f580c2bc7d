/**
 * The Go static provisioner (v2.7.0, built from its public source), measured beside ours
 * in issue 16 on the same mounts. Its module is not served by the Go module proxy these
 * machines reach (403), so its figures are quoted here, not measured in each run.
 */
export const GO_PEER = {
  rssMiB100: 37,
  rssMiB1000: 43,
  /** RssAnon, measured in issue 25 as the image runs each (Go v2.7.0 / ours). */
  privateMiB100: 8,
  privateMiB1000: 16,
  cpuTo1000PvsS: 2.7,
  idleCpu20sS: 0.10,
  startToFirstPvS: 0.4,
  idleRequestsPerMinute: 0,
  requestsFor1000Pvs: 1005,
} as const;
