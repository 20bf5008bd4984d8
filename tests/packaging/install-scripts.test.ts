import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * npm 11 runs a dependency's install script only when package.json's `allowScripts` approves it
 * (and warns at every install about scripts it does not cover). The lockfile marks every package
 * that has one (`hasInstallScript`), so a dependency update that brings a new install script fails
 * here, before anyone's install prints a warning or runs unreviewed code.
 */

const read = async (path: string) => JSON.parse(await readFile(new URL(`../../${path}`, import.meta.url), 'utf8'));

let policy: Record<string, boolean>;
let withScripts: Map<string, string>;

beforeAll(async () => {
  policy = (await read('package.json')).allowScripts;
  const lock: { packages: Record<string, { version?: string; hasInstallScript?: boolean; link?: boolean }> } =
    await read('package-lock.json');
  withScripts = new Map();
  for (const [path, entry] of Object.entries(lock.packages)) {
    // "" is this project (its own postinstall applies patches/), and workspaces are ours too.
    if (!entry.hasInstallScript || !path.includes('node_modules/') || entry.link) continue;
    withScripts.set(path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), entry.version ?? '');
  }
});

/** The package an allowScripts key names: `name` or `name@version` (scoped names keep their first @). */
const nameOf = (key: string) => key.slice(0, key.indexOf('@', 1) > 0 ? key.indexOf('@', 1) : undefined);

describe('allowScripts in package.json', () => {
  it('decides every dependency install script in the lockfile', () => {
    expect(withScripts.size).toBeGreaterThan(0);
    const decided = new Set(Object.keys(policy).map(nameOf));
    const undecided = [...withScripts].filter(([name]) => !decided.has(name)).map(([name, v]) => `${name}@${v}`);
    expect(undecided, 'review these install scripts, then allow (true) or deny (false) them in allowScripts').toEqual([]);
  });

  it('names no package that no longer has an install script (npm install-scripts prune)', () => {
    expect(Object.keys(policy).filter((key) => !withScripts.has(nameOf(key)))).toEqual([]);
  });

  it("allows esbuild's (it checks, or fetches, the binary the build and tsx run) and denies the optional native builds", () => {
    expect(policy).toEqual({
      esbuild: true,
      // testcontainers → ssh2: optional native crypto, and its optional cpu-features probe; ssh2 falls back to JS.
      'cpu-features': false,
      ssh2: false,
      // bullmq → msgpackr: the script only compiles when no prebuilt binary fits; the prebuilt package still loads.
      'msgpackr-extract': false,
      // testcontainers → dockerode → protobufjs: the script only prints a version-scheme notice.
      protobufjs: false,
      // @stoplight/spectral-* (the OpenAPI lint test) → @scarf/scarf: install analytics, nothing the package needs.
      '@scarf/scarf': false,
    });
  });
});
