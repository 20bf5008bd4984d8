/** Where the console is mounted; every console path is built from it (consolePath). */
export const CONSOLE_PATH = '/console';

/**
 * A console path: CONSOLE_PATH and the given segments, each percent-encoded (`consolePath()` is
 * CONSOLE_PATH itself; a trailing '' gives a trailing slash).
 */
export const consolePath = (...segments: (string | number)[]): string =>
  [CONSOLE_PATH, ...segments.map((s) => encodeURIComponent(String(s)))].join('/');
