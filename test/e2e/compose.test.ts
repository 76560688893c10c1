/**
 * docker-compose.yml and the Dockerfile cannot be run here (no Docker
 * engine), so this checks what can go stale without one: the ensemble's
 * wiring, every file the services name, every zkq command they run (parsed
 * by the real CLI; the worker service's command line is run for real against
 * the test server), every workspace's manifest copied before `npm ci`, and
 * one image tag, built once, named alike in both files and the docs. The
 * `tls` profile is checked alike: its services, the environment variables
 * the CLI really reads, the files scripts/tls-certificates.ts makes for its
 * mounts, and its worker's command line run against a TLS-only server made
 * from those files.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startZooKeeper, type TestCertificates, uniqueRoot } from '@zkq/testing';
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
  profiles?: string[];
  volumes?: string[];
  hostname?: string;
}

const compose = parse(readFileSync(join(REPO, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const zkqServices = Object.entries(services).filter(([, s]) => s.build !== undefined || s.image?.startsWith('zkq'));
/** The services `docker compose up` starts (no profile named). */
const defaults = Object.fromEntries(Object.entries(services).filter(([, s]) => s.profiles === undefined));
const defaultZkqServices = zkqServices.filter(([, s]) => s.profiles === undefined);

/** Every zkq invocation of a service, as argument lists. */
function zkqInvocations(service: Service): string[][] {
  const entry = Array.isArray(service.entrypoint) ? service.entrypoint : [];
  const command = Array.isArray(service.command) ? service.command : service.command ? [service.command] : [];
  if (entry.length === 0) return [command.map(String)]; // the image's entrypoint is zkq itself
  const script = command.join('\n');
  return [...script.matchAll(/(?:^|[|;&\s])zkq\s+([^|;&\n]+)/g)].map((m) => (m[1] as string).trim().split(/\s+/));
}

test('three ZooKeeper servers with distinct ids, one server list, and the 4lw whitelist', () => {
  const zks = Object.entries(defaults).filter(([, s]) => s.image?.startsWith('zookeeper:'));
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
  assert.ok(defaultZkqServices.length >= 2, 'worker and producer');
  for (const [name, s] of defaultZkqServices) {
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

// ---- the tls profile ---------------------------------------------------------

const tlsServices = Object.entries(services).filter(([, s]) => s.profiles?.includes('tls'));
const zkTls = services['zk-tls'] as Service;
const workerTls = services['worker-tls'] as Service;

/** The names of the environment variables the CLI reads (`process.env.NAME` in its sources). */
function variablesTheCliReads(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/process\.env\.([A-Z_]+)/g)) names.add(m[1] as string);
      }
    }
  };
  walk(join(REPO, 'packages/cli/src'));
  return names;
}

/** Runs scripts/tls-certificates.ts into a fresh folder; returns it and its zoo.cfg as settings. */
function makeTlsFolder(): { dir: string; cfg: Map<string, string> } {
  const dir = join(mkdtempSync(join(tmpdir(), 'zkq-compose-')), 'tls');
  execFileSync(join(REPO, 'node_modules/.bin/tsx'), [join(REPO, 'scripts/tls-certificates.ts'), dir], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines = readFileSync(join(dir, 'zoo.cfg'), 'utf8').split('\n').filter(Boolean);
  return { dir, cfg: new Map(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) };
}

/** A container path under a mount of ./tls, as the file in `dir`; undefined when not under one. */
function hostPath(service: Service, containerPath: string, dir: string): string | undefined {
  for (const volume of service.volumes ?? []) {
    const [source, target] = volume.split(':') as [string, string];
    if (!source.startsWith('./tls')) continue;
    const inFolder = source.slice('./tls'.length);
    if (containerPath === target) return join(dir, inFolder);
    if (containerPath.startsWith(`${target}/`)) return join(dir, inFolder, containerPath.slice(target.length + 1));
  }
  return undefined;
}

test('the tls profile: a TLS-only ZooKeeper and a worker wired to it with variables the CLI reads', () => {
  assert.deepEqual(tlsServices.map(([name]) => name).sort(), ['worker-tls', 'zk-tls']);
  for (const [name, s] of Object.entries(defaults)) {
    for (const dep of Object.keys(s.depends_on ?? {})) assert.ok(defaults[dep], `${name} depends on ${dep}, started`);
  }
  assert.equal(zkTls.image, 'zookeeper:3.8');
  assert.equal(zkTls.hostname, 'zk-tls');
  assert.equal(workerTls.depends_on?.['zk-tls']?.condition, 'service_healthy');
  assert.ok(zkTls.volumes?.includes('./tls/zoo.cfg:/conf/zoo.cfg:ro'), "the script's zoo.cfg is the server's");
  const env = workerTls.environment ?? {};
  assert.equal(env.ZKQ_ZK, 'zk-tls:2281');
  const read = variablesTheCliReads();
  for (const name of Object.keys(env)) assert.ok(read.has(name), `the CLI reads ${name}`);
  for (const name of ['ZKQ_TLS_CA', 'ZKQ_TLS_CERT', 'ZKQ_TLS_KEY']) assert.ok(env[name], `worker-tls sets ${name}`);
  const ignored = readFileSync(join(REPO, '.dockerignore'), 'utf8').split('\n');
  assert.ok(ignored.includes('tls'), 'the keys are not sent to the image build');
  assert.match(readFileSync(join(REPO, '.gitignore'), 'utf8'), /^\/tls\/$/m, 'nor committed');
});

test('scripts/tls-certificates.ts makes every file the profile mounts, and a zoo.cfg for TLS only', () => {
  const { dir, cfg } = makeTlsFolder();
  for (const [name, s] of tlsServices) {
    for (const volume of s.volumes ?? []) {
      const [source] = volume.split(':') as [string];
      if (source.startsWith('./')) assert.ok(existsSync(join(dir, source.slice('./tls'.length))), `${name}: ${source}`);
    }
  }
  for (const value of Object.values(workerTls.environment ?? {})) {
    if (!value.startsWith('/')) continue;
    const file = hostPath(workerTls, value, dir);
    assert.ok(file && existsSync(file), `worker-tls: ${value} is in the mounted folder`);
  }
  for (const key of ['ssl.keyStore.location', 'ssl.trustStore.location']) {
    const file = hostPath(zkTls, cfg.get(key) as string, dir);
    assert.ok(file && existsSync(file), `zk-tls: ${key} ${cfg.get(key)} is in the mounted folder`);
  }
  assert.equal(cfg.get('secureClientPort'), workerTls.environment?.ZKQ_ZK?.split(':')[1], 'the port the worker uses');
  assert.equal(cfg.has('clientPort'), false, 'no plain port');
  assert.equal(cfg.get('ssl.clientAuth'), 'need');
  assert.equal(cfg.get('serverCnxnFactory'), 'org.apache.zookeeper.server.NettyServerCnxnFactory');
  assert.ok(zkTls.ports?.some((p) => p.endsWith(`:${cfg.get('secureClientPort')}`)));
  assert.match(
    execFileSync('openssl', ['x509', '-in', join(dir, 'server.pem'), '-noout', '-ext', 'subjectAltName'], {
      encoding: 'utf8',
    }),
    /DNS:zk-tls\b/,
    "the server certificate names the service's host name",
  );
});

test("the worker-tls command line and environment run a worker on a TLS-only server made from the script's files", async (t) => {
  const { dir, cfg } = makeTlsFolder();
  const file = (name: string) => join(dir, name);
  const client = { cert: file('client.pem'), key: file('client.key'), subject: 'CN=zkq-worker,O=zkq' };
  const certificates: TestCertificates = {
    dir,
    ca: file('ca.pem'),
    otherCa: file('other-ca.pem'),
    keyStore: file('server.p12'),
    trustStore: file('trust.p12'),
    password: cfg.get('ssl.keyStore.password') as string,
    client,
    expiredClient: client,
  };
  const server = await startZooKeeper({ heapMb: 128, tls: { certificates, clientAuth: 'need' } });
  t.after(() => server.stop());
  const env: NodeJS.ProcessEnv = { ZKQ_ZK: server.connectionString };
  for (const [name, value] of Object.entries(workerTls.environment ?? {})) {
    if (name !== 'ZKQ_ZK') env[name] = hostPath(workerTls, value, dir) ?? value;
  }
  const namespace = `--namespace=${uniqueRoot('compose-tls').slice(1)}`;
  const args = zkqInvocations(workerTls)[0] as string[];
  const worker = new ZkqProcess([...args, namespace], { env });
  t.after(() => worker.dispose());
  await worker.waitForLine(/worker ready/, 60_000);
  const added = await zkq(['add', 'demo', 'tick', namespace, '--acl=creator'], { env });
  assert.equal(added.code, 0, added.stderr);
  await worker.waitForLine(/"msg":"job completed"/, 60_000);
  const plain = await zkq(['stats', 'demo', namespace, `--zk=${server.connectionString}`, '--connect-timeout=5000']);
  assert.notEqual(plain.code, 0, 'no plain connection');
  worker.kill('SIGTERM');
  assert.equal((await within(worker.exited, 60_000, 'worker exit')).code, 0);
});
