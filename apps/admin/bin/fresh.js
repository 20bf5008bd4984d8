// Whether a bundle may stand in for the TypeScript it was built from (see quest-admin.js).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Newest modification time (ms) of the .ts files under `dirs` (missing directories are skipped). */
export function newestSource(dirs) {
  let newest = 0;
  for (const dir of dirs) {
    let names;
    try {
      names = readdirSync(dir, { recursive: true });
    } catch {
      continue;
    }
    for (const name of names) if (name.endsWith('.ts')) newest = Math.max(newest, statSync(join(dir, name)).mtimeMs);
  }
  return newest;
}

/** True when `bundle` exists and no .ts file under `dirs` is newer than it. */
export function bundleIsFresh(bundle, dirs) {
  let built;
  try {
    built = statSync(bundle).mtimeMs;
  } catch {
    return false;
  }
  return built >= newestSource(dirs);
}

/** The sources of quest-admin's bundle: the CLI and every workspace package. */
export function adminSourceDirs(root) {
  const dirs = [join(root, 'apps/admin/src')];
  try {
    for (const p of readdirSync(join(root, 'packages'))) dirs.push(join(root, 'packages', p, 'src'));
  } catch {}
  return dirs;
}
