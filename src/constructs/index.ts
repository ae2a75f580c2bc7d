export { LocalVolumeProvisioner } from './local-volume-provisioner';
export * from './props';
export { DEFAULT_IMAGE, IMAGE_REPOSITORY } from './image';
export { CONFIG_MOUNT_PATH } from './resolve';
export { PV_SPEC_CONFIGMAP_ANNOTATION as DEVICE_SPEC_ANNOTATION, NODE_CLEANUP_LEASE } from '../config';
export { ServiceMonitor, PrometheusRule } from './monitoring';
export type {
  AlertingRule, MatchLabelsSelector, PrometheusRuleProps, PrometheusRuleSpec, RuleGroup,
  ServiceMonitorEndpoint, ServiceMonitorProps, ServiceMonitorSpec,
} from './monitoring';
