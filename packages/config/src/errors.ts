/** A bad environment: the message lists every bad variable on its own line, ready to print. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
