/**
 * The slice of a logger the kube edge uses; the runtime's Logger (observability) fits it as is.
 */
export interface KubeLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const silentLogger: KubeLogger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
};
