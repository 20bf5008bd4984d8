# syntax=docker/dockerfile:1
# One image for every process of the Quest Rewards Service. The api and worker run as esbuild
# bundles of the workspace TypeScript (`npm run build`, third-party packages stay in node_modules);
# the admin CLI and migrations run through tsx. The default command is the API; compose overrides it
# for the worker (`npm run start --workspace @quest/worker`) and the one-shot migration
# (`npm run migrate`). The admin CLI is in the image too: `docker compose run --rm api npx quest-admin …`.

# Stage 1: only what `npm ci` reads (every package.json, the lockfile, workspace bin scripts), so the
# dependency layer below is rebuilt when a manifest changes, not on every source edit. New
# workspaces are picked up without editing this file.
FROM node:20-bookworm-slim AS manifests
WORKDIR /src
COPY . .
RUN find . -type f ! -name package.json ! -name package-lock.json ! -path './apps/*/bin/*' ! -path './patches/*' -delete \
 && find . -type d -empty -delete

# Stage 2: the runtime image.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app
COPY --from=manifests /src/ ./
# Production dependencies only (tsx and esbuild are dependencies of the apps; test and lint tools
# are not needed), then the bundles.
RUN npm ci --omit=dev \
 && npm cache clean --force
COPY . .
RUN node scripts/build.mjs
# tsx keeps its transform cache under the OS temp dir; everything else is read-only at run time.
USER node
EXPOSE 3000
CMD ["npm", "run", "start", "--workspace", "@quest/api"]
