/**
 * The provisioner name written in `pv.kubernetes.io/provisioned-by`, as the Go
 * provisioner spells it, so the PVs it created are recognised as ours.
 */
export function provisionerName(nodeName: string, nodeUID: string, useNodeNameOnly: boolean): string {
  if (useNodeNameOnly) {
    return `local-volume-provisioner-${nodeName}`;
  }
  if (nodeUID === '') {
    throw new Error(`node "${nodeName}" has no UID; the provisioner name needs it unless useNodeNameOnly is set`);
  }
  return `local-volume-provisioner-${nodeName}-${nodeUID}`;
}
