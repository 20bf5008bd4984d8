// Whether quest-admin's bundle may stand in for its sources (see quest-admin.js): the rule is
// @quest/config's; which sources count is quest-admin's.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export { bundleIsFresh } from '@quest/config/fresh';

/** The sources of quest-admin's bundle: the CLI and every workspace package. */
export function adminSourceDirs(root) {
  const dirs = [join(root, 'apps/admin/src')];
  try {
    for (const p of readdirSync(join(root, 'packages'))) dirs.push(join(root, 'packages', p, 'src'));
  } catch {}
  return dirs;
}
