# syntax=docker/dockerfile:1
# One image for every process of the Quest Rewards Service. The api and worker run as esbuild
# bundles of the workspace TypeScript (`node scripts/build.mjs`, third-party packages stay in
# node_modules), and so does the admin CLI (apps/admin/dist/cli.mjs, which its launcher prefers
# while it is newer than the sources); migrations run through tsx. The default command is the API;
# compose overrides it for the worker (`npm run start --workspace @quest/worker`) and the one-shot
# migration (`npm run migrate`). The admin CLI is in the image too:
# `docker compose run --rm api npx quest-admin …` (compose sets API_BASE_URL=http://api:3000).

# Node 22 LTS (what CI runs, see .nvmrc) with the npm that package.json's `packageManager` names.
FROM node:22-bookworm-slim AS node
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
RUN npm install --global npm@11.19.1 \
 && npm cache clean --force

# Stage 1: only what `npm ci` reads (every package.json, the lockfile, workspace bin scripts, the
# patches), so the dependency layer below is rebuilt when a manifest changes, not on every source
# edit. New workspaces are picked up without editing this file.
FROM node AS manifests
WORKDIR /src
COPY . .
RUN find . -type f ! -name package.json ! -name package-lock.json ! -path './apps/*/bin/*' ! -path './patches/*' -delete \
 && find . -type d -empty -delete

# Stage 2: the runtime image.
FROM node
ENV NODE_ENV=production
WORKDIR /app
COPY --from=manifests /src/ ./
# Only what runs: the production dependencies of the three deployable workspaces (api, worker,
# admin) and the packages they use. Not the root's dev tools (vitest, biome, turbo,
# testcontainers) nor the bench, chaos, test and fixture workspaces, whose "dependencies" a plain
# `npm ci --omit=dev` would install (npm installs every workspace's dependencies).
# --ignore-scripts: the only install script that matters is the root's `patch-package` (the
# postgres.js and BullMQ fixes in patches/), which is not a dependency of these workspaces, so it runs
# explicitly, pinned to the root's version. typescript is installed as an optional peer of abitype
# (types only, through viem); nothing runs it.
RUN npm ci --omit=dev --ignore-scripts --workspace @quest/api --workspace @quest/worker --workspace @quest/admin \
 && npx --yes patch-package@8.0.1 \
 && rm -rf node_modules/typescript \
 && npm cache clean --force
COPY . .
# The bundles: apps/api/dist/server.mjs, apps/worker/dist/main.mjs, the worker's healthcheck and
# apps/admin/dist/cli.mjs with its chunks in apps/admin/dist/chunks/ (built after the sources are
# copied, so the launcher finds it fresh).
RUN node scripts/build.mjs
# tsx keeps its transform cache under the OS temp dir, and the worker writes its liveness file
# there (WORKER_HEALTH_FILE); everything else is read-only at run time.
USER node
EXPOSE 3000
CMD ["npm", "run", "start", "--workspace", "@quest/api"]
