export { bundleIsFresh, newestSource } from '@quest/config/fresh';
export function adminSourceDirs(root: string): string[];
