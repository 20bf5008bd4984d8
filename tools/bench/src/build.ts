import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type BuildOptions, build, type Plugin } from 'esbuild';
import { REPO_ROOT } from '@quest/testing/processes';

/**
 * `--runtime bundle` (the default): measure the service the way `npm start` runs it — an esbuild
 * bundle per app run by plain node — rather than TypeScript through tsx (`--runtime tsx`, what
 * `npm run dev` and the tests do). Same build settings as scripts/build.mjs (only @quest/* and the
 * app are bundled; third-party packages stay external and resolve from the repo's node_modules,
 * which is why the output lives under the repo root), but written to the bench's own results
 * directory so a concurrent `npm run build` or system test never sees a half-written apps/*\/dist.
 */
export interface Bundle {
  api: string;
  worker: string;
  /** The reference service (reference-server.ts), bundled the same way so runtimes compare fairly. */
  reference: string;
  /** The obvious-queue peer's two processes (peer-api.ts, peer-worker.ts), bundled the same way. */
  peerApi: string;
  peerWorker: string;
  /** quest-admin, bundled as `npm run build` bundles it into apps/admin/dist. */
  admin: string;
}

const externalThirdParty: Plugin = {
  name: 'external-third-party',
  setup(b) {
    // Bare specifiers that are not our workspace packages stay external.
    b.onResolve({ filter: /^[^./]/ }, (args) =>
      args.path.startsWith('@quest/') ? undefined : { path: args.path, external: true },
    );
  },
};

/**
 * Lua scripts live in .lua files beside the module that reads them once at load
 * (`readFileSync(new URL('./name.lua', import.meta.url), 'utf8')`); a bundle is not beside them, so
 * each such read becomes the script's text, as scripts/build.mjs does. Another form fails the build.
 */
const LUA_READ = /readFileSync\(new URL\('(\.\/[\w./-]+\.lua)', import\.meta\.url\), 'utf8'\)/g;
const inlineLua: Plugin = {
  name: 'inline-lua',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes('node_modules')) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('.lua')) return undefined;
      const contents = source.replace(LUA_READ, (_, file: string) =>
        JSON.stringify(readFileSync(join(dirname(args.path), file), 'utf8')),
      );
      if (/\.lua'/.test(contents)) throw new Error(`${args.path}: a .lua file read in another form than ${LUA_READ}`);
      return { contents, loader: 'ts' };
    });
  },
};

/** What every bundle here shares with scripts/build.mjs's: ESM for node, third-party packages left external. */
const NODE_BUNDLE = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: false,
  logLevel: 'warning',
  plugins: [externalThirdParty, inlineLua],
} satisfies BuildOptions;

export async function bundleServices(outDir: string): Promise<Bundle> {
  const bin = join(outDir, 'bin');
  mkdirSync(bin, { recursive: true });
  await build({
    entryPoints: {
      api: join(REPO_ROOT, 'apps/api/src/server.ts'),
      worker: join(REPO_ROOT, 'apps/worker/src/main.ts'),
      reference: join(REPO_ROOT, 'tools/bench/src/reference-server.ts'),
      'peer-api': join(REPO_ROOT, 'tools/bench/src/peer-api.ts'),
      'peer-worker': join(REPO_ROOT, 'tools/bench/src/peer-worker.ts'),
    },
    outdir: bin,
    outExtension: { '.js': '.mjs' },
    ...NODE_BUNDLE,
  });
  // quest-admin resolves its third-party packages from apps/admin/node_modules (its commander is
  // newer than the one hoisted to the root), so its bundle must live under apps/admin, as
  // apps/admin/dist/cli.mjs does; a directory of its own keeps it apart from `npm run build`'s.
  // Split at each command's import, as `npm run build` splits it: a command loads only its chunks.
  const adminDir = join(REPO_ROOT, 'apps/admin/dist', `bench-${basename(outDir)}`);
  process.once('exit', () => rmSync(adminDir, { recursive: true, force: true }));
  await build({
    entryPoints: { cli: join(REPO_ROOT, 'apps/admin/src/cli.ts') },
    outdir: adminDir,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    ...NODE_BUNDLE,
  });
  return {
    api: join(bin, 'api.mjs'),
    worker: join(bin, 'worker.mjs'),
    reference: join(bin, 'reference.mjs'),
    peerApi: join(bin, 'peer-api.mjs'),
    peerWorker: join(bin, 'peer-worker.mjs'),
    admin: join(adminDir, 'cli.mjs'),
  };
}
