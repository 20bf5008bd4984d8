export { bundleIsFresh } from '@quest/config/fresh';
export function adminSourceDirs(root: string): string[];
