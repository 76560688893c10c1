# zkq: the `zkq` command (worker daemon, producer and admin tools, dashboard)
# in one image, tagged zkq:local (docker-compose.yml builds the same tag).
# The image has no Java, so `zkq dev-server` and `zkq demo` do not run in it:
# run ZooKeeper from the zookeeper image, as docker-compose.yml does.
#
#   docker build -t zkq:local .
#   docker run --rm zkq:local --help
#   docker run --rm zkq:local worker emails --processor examples/processors/send-email.js --zk zk1:2181
#
# Build stage: install with the lockfile, compile, then drop dev dependencies.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/testing/package.json packages/testing/
COPY packages/core/package.json packages/core/
COPY packages/producer/package.json packages/producer/
COPY packages/worker/package.json packages/worker/
COPY packages/bullmq/package.json packages/bullmq/
COPY packages/cli/package.json packages/cli/
# No install scripts: the only native add-ons in the tree are optional
# accelerators of development tools.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages packages
COPY examples examples
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# Runtime stage: Node, the compiled workspace, production dependencies only.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app /app
RUN ln -s /app/packages/cli/dist/bin.js /usr/local/bin/zkq
USER node
# Prometheus metrics of `zkq worker --metrics-port 9464 --metrics-host 0.0.0.0`.
EXPOSE 9464
ENTRYPOINT ["node", "packages/cli/dist/bin.js"]
CMD ["--help"]
