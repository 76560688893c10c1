/**
 * docker-compose.yml and the Dockerfile cannot be run here (no Docker
 * engine), so this checks what can go stale without one: the ensemble's
 * wiring, every file the services name, every zkq command they run (parsed
 * by the real CLI; the worker service's command line is run for real against
 * the test server), every workspace's manifest copied before `npm ci`, and
 * one image tag, built once, named alike in both files and the docs.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import { cliEnv, REPO, within, ZkqProcess, zkq } from './cli.js';

interface Service {
  image?: string;
  pull_policy?: string;
  build?: string | { context: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string>;
  ports?: string[];
  container_name?: string;
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(readFileSync(join(REPO, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const zkqServices = Object.entries(services).filter(([, s]) => s.build !== undefined || s.image?.startsWith('zkq'));

/** Every zkq invocation of a service, as argument lists. */
function zkqInvocations(service: Service): string[][] {
  const entry = Array.isArray(service.entrypoint) ? service.entrypoint : [];
  const command = Array.isArray(service.command) ? service.command : service.command ? [service.command] : [];
  if (entry.length === 0) return [command.map(String)]; // the image's entrypoint is zkq itself
  const script = command.join('\n');
  return [...script.matchAll(/(?:^|[|;&\s])zkq\s+([^|;&\n]+)/g)].map((m) => (m[1] as string).trim().split(/\s+/));
}

test('three ZooKeeper servers with distinct ids, one server list, and the 4lw whitelist', () => {
  const zks = Object.entries(services).filter(([, s]) => s.image?.startsWith('zookeeper:'));
  assert.deepEqual(
    zks.map(([name]) => name),
    ['zk1', 'zk2', 'zk3'],
  );
  const ids = zks.map(([, s]) => s.environment?.ZOO_MY_ID);
  assert.deepEqual(ids, ['1', '2', '3']);
  for (const [name, s] of zks) {
    assert.equal(s.image, 'zookeeper:3.8');
    const servers = String(s.environment?.ZOO_SERVERS).split(/\s+/);
    assert.deepEqual(
      servers.map((x) => x.split('=')[1]?.split(':')[0]),
      ['zk1', 'zk2', 'zk3'],
      name,
    );
    assert.match(String(s.environment?.ZOO_4LW_COMMANDS_WHITELIST), /srvr/);
  }
});

test('the zkq services build from files that exist and can be scaled', () => {
  assert.ok(zkqServices.length >= 2, 'worker and producer');
  for (const [name, s] of zkqServices) {
    const build = typeof s.build === 'string' ? { context: s.build } : s.build;
    if (build) {
      assert.ok(existsSync(join(REPO, build.context, build.dockerfile ?? 'Dockerfile')), `${name}: Dockerfile`);
      assert.ok(existsSync(join(REPO, build.context, '.dockerignore')), `${name}: .dockerignore`);
    }
    assert.equal(s.environment?.ZKQ_ZK, 'zk1:2181,zk2:2181,zk3:2181', `${name} talks to the ensemble`);
    for (const dep of ['zk1', 'zk2', 'zk3']) assert.equal(s.depends_on?.[dep]?.condition, 'service_healthy', name);
  }
  const worker = services.worker as Service;
  assert.equal(worker.container_name, undefined, 'a fixed name would prevent --scale');
  assert.equal(worker.ports, undefined, 'a fixed host port would prevent --scale');
  const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
  assert.match(dockerfile, /^FROM node:20-bookworm-slim/m);
  assert.match(dockerfile, /npm ci/);
  assert.match(dockerfile, /^ENTRYPOINT \["node", "packages\/cli\/dist\/bin\.js"\]$/m);
  for (const m of dockerfile.matchAll(/^COPY (?!--from)(\S+)/gm)) {
    assert.ok(existsSync(join(REPO, m[1] as string)), `Dockerfile copies ${m[1]}`);
  }
});

test('every file a zkq service names exists, and every zkq command it runs is a real command', async () => {
  let checked = 0;
  for (const [name, s] of zkqServices) {
    for (const args of zkqInvocations(s)) {
      for (const arg of args) {
        if (/^(examples|packages|test)\//.test(arg)) assert.ok(existsSync(join(REPO, arg)), `${name}: ${arg} exists`);
      }
      const r = await zkq([args[0] as string, '--help']);
      assert.equal(r.code, 0, `${name}: zkq ${args[0]} --help: ${r.stderr}`);
      checked++;
    }
  }
  assert.ok(checked >= 2, 'the worker and the producer run zkq');
});

test("the worker service's command line starts a worker and drains on SIGTERM", async (t) => {
  const env = await cliEnv(t);
  const args = zkqInvocations(services.worker as Service)[0] as string[];
  assert.equal(args[0], 'worker');
  const here: Record<string, string> = { '--zk': env.zk, '--metrics-port': '0', '--metrics-host': '127.0.0.1' };
  const local = args.map((a, i) => here[args[i - 1] as string] ?? a);
  const worker = new ZkqProcess([...local, `--namespace=${env.namespace}`]);
  t.after(() => worker.dispose());
  await worker.waitForLine(/worker ready/, 60_000);
  const producerArgs = zkqInvocations(services.producer as Service)[0] as string[];
  const lines = Array.from({ length: 5 }, (_, n) => JSON.stringify({ name: 'tick', data: { n } })).join('\n');
  const added = await zkq([...producerArgs, `--zk=${env.zk}`, `--namespace=${env.namespace}`], { input: lines });
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stdout, /^added 5 jobs to demo/);
  await worker.waitForLine(/"msg":"job completed"/, 60_000);
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});

const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');

test("the Dockerfile copies every workspace's manifest before npm ci, and the build context keeps them", () => {
  const workspaces: string[] = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).workspaces;
  const beforeInstall = dockerfile.slice(0, dockerfile.search(/^RUN npm ci\b/m));
  const copied = [...beforeInstall.matchAll(/^COPY (?!--from)(.+) (\S+)$/gm)].flatMap((m) =>
    (m[1] as string).split(/\s+/).map((src) => (src.endsWith('package.json') ? src : join(src, 'package.json'))),
  );
  for (const ws of workspaces) {
    assert.ok(copied.includes(`${ws}/package.json`), `Dockerfile copies ${ws}/package.json before npm ci`);
  }
  assert.ok(copied.includes('package-lock.json') || /COPY package\.json package-lock\.json/.test(beforeInstall));
  const ignored = readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n');
  for (const ws of workspaces) assert.ok(!ignored.includes(ws) && !ignored.includes('packages'), `${ws} is sent`);
});

test('one image, built by one service, under one tag in the Dockerfile, compose and the docs', () => {
  const builders = zkqServices.filter(([, s]) => s.build !== undefined);
  assert.deepEqual(
    builders.map(([name]) => name),
    ['worker'],
    'one service builds the image',
  );
  const tag = (services.worker as Service).image as string;
  assert.match(tag, /^zkq:/);
  for (const [name, s] of zkqServices) {
    assert.equal(s.image, tag, `${name} runs ${tag}`);
    if (s.build === undefined) assert.equal(s.pull_policy, 'never', `${name} runs the built image, never pulls it`);
  }
  const operations = readFileSync(join(REPO, 'docs/operations.md'), 'utf8');
  for (const [file, text] of [
    ['Dockerfile', dockerfile],
    ['docs/operations.md', operations],
  ] as const) {
    const named = [...text.matchAll(/docker (?:build -t|run --rm) (\S+)/g)].map((m) => m[1]);
    for (const n of named) assert.equal(n, tag, `${file} names the image ${tag}`);
  }
  assert.match(dockerfile, new RegExp(`docker build -t ${tag} \\.`));
});

test('the image offers only commands it can run: without Java, no dev-server or demo', (t) => {
  if (/\b(openjdk|default-jre|temurin)/i.test(dockerfile)) return t.skip('the image installs Java');
  const header = dockerfile.split('\n').filter((l) => l.startsWith('#'));
  for (const line of header.filter((l) => /docker run/.test(l))) {
    assert.doesNotMatch(line, /\b(dev-server|demo)\b/, line);
  }
  assert.ok(
    header.some((l) => /no Java/.test(l)),
    'the header says the image has no Java',
  );
  assert.doesNotMatch(header.join('\n'), /dev server\)/, 'it does not promise a dev server');
});
