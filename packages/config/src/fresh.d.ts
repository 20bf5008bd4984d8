export function newestSource(dirs: readonly string[]): number;
export function bundleIsFresh(bundle: string, dirs: readonly string[]): boolean;
