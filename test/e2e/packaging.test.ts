/**
 * The packages as users get them: build, pack every workspace, install the
 * tarballs into a scratch project outside the repository (so nothing resolves
 * through the workspace), and use them from there: a producer and a worker
 * against ZooKeeper, a TypeScript consumer checked with skipLibCheck off, and
 * the `zkq` binary from node_modules/.bin, with and without @zkq/testing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sharedZooKeeper, uniqueRoot } from '@zkq/testing';
import { REPO } from './cli.js';

const PACKAGES = ['core', 'producer', 'worker', 'cli', 'testing', 'bullmq'];
const FIXTURES = join(REPO, 'test/fixtures/packaging');
const TSC = join(REPO, 'node_modules/typescript/bin/tsc');
const STEP_TIMEOUT_MS = 180_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * An outer `npm run` pins its project (npm_config_local_prefix) and package
 * for the npm commands below; its other settings (cache, registry) stay.
 */
const OUTER_NPM_RUN = /^(npm_config_local_prefix|npm_package_.*|npm_lifecycle_.*|INIT_CWD)$/i;

/** Runs a command to its end (killed after STEP_TIMEOUT_MS). */
function run(cmd: string, args: string[], cwd: string): Promise<Run> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !OUTER_NPM_RUN.test(k)));
  delete env.ZKQ_ZK;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), STEP_TIMEOUT_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function ok(cmd: string, args: string[], cwd: string): Promise<string> {
  const r = await run(cmd, args, cwd);
  assert.equal(r.code, 0, `${cmd} ${args.join(' ')} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

let scratch: string;
let app: string;
const packed = new Map<string, { filename: string; files: string[] }>();

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'zkq-packaging-'));
  const packs = join(scratch, 'packs');
  app = join(scratch, 'app');
  // One build (a no-op after `npm run build`); the packs skip each package's prepack build.
  await ok(process.execPath, [TSC, '-b'], REPO);
  mkdirSync(packs);
  const out = await ok(
    'npm',
    ['pack', '--workspaces', '--ignore-scripts', '--json', '--pack-destination', packs, '--loglevel=error'],
    REPO,
  );
  for (const p of JSON.parse(out) as { name: string; filename: string; files: { path: string }[] }[]) {
    packed.set(p.name.replace('@zkq/', ''), { filename: p.filename, files: p.files.map((f) => f.path) });
  }
  const dependencies = Object.fromEntries(
    PACKAGES.map((p) => [`@zkq/${p}`, `file:${join(packs, packed.get(p)?.filename ?? `${p}-missing.tgz`)}`]),
  );
  // The consumer's own @types/node, as any TypeScript project on Node has.
  dependencies['@types/node'] = readJson(join(REPO, 'package.json')).devDependencies['@types/node'];
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies }),
  );
  await ok('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
});

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test('every package is packed with its license, readme, build output and public metadata', () => {
  const license = readFileSync(join(REPO, 'LICENSE'), 'utf8');
  assert.match(license, /Apache License\s+Version 2\.0/);
  for (const name of PACKAGES) {
    const files = packed.get(name)?.files ?? [];
    for (const f of ['LICENSE', 'README.md', 'package.json', 'dist/index.js', 'dist/index.d.ts']) {
      assert.ok(files.includes(f), `@zkq/${name} ships ${f}`);
    }
    assert.ok(!files.some((f) => f.endsWith('.tsbuildinfo')), `@zkq/${name} ships no build info`);
    const dir = join(app, 'node_modules/@zkq', name);
    assert.equal(readFileSync(join(dir, 'LICENSE'), 'utf8'), license);
    const pkg = readJson(join(dir, 'package.json'));
    assert.equal(pkg.license, 'Apache-2.0');
    assert.equal(pkg.publishConfig?.access, 'public');
    assert.equal(pkg.version, readJson(join(REPO, 'package.json')).version, 'one version for every package');
    for (const field of ['repository', 'homepage', 'keywords', 'engines', 'files', 'exports']) {
      assert.ok(pkg[field], `@zkq/${name} has ${field}`);
    }
    assert.ok(!pkg.dependencies?.['@zkq/testing'], `@zkq/${name} does not need @zkq/testing at run time`);
  }
  assert.ok(packed.get('cli')?.files.includes('dist/bin.js'));
});

test('a producer and a worker run from the installed packages', async () => {
  const zk = await sharedZooKeeper();
  const prefix = uniqueRoot('packaging').slice(1);
  copyFileSync(join(FIXTURES, 'app.mjs'), join(app, 'app.mjs'));
  const out = JSON.parse(await ok(process.execPath, ['app.mjs', zk, prefix], app));
  assert.deepEqual(out.results, [{ doubled: 42 }, { doubled: 10 }]);

  // The installed CLI reads the same queue and agrees with the library.
  const zkq = join(app, 'node_modules/.bin/zkq');
  const stats = JSON.parse(await ok(zkq, ['stats', 'packaged', `--zk=${zk}`, `--namespace=${prefix}`, '--json'], app));
  for (const [state, n] of Object.entries(out.counts)) assert.equal(stats.counts[state], n, state);
  assert.equal(stats.counts.completed, 1, 'the removeOnComplete job is gone, the other kept');
});

test('a BullMQ application runs on ZooKeeper from the installed packages (bullmq comes as a peer)', async () => {
  const zk = await sharedZooKeeper();
  const namespace = uniqueRoot('packaging-bullmq').slice(1);
  copyFileSync(join(FIXTURES, 'bullmq-app.mjs'), join(app, 'bullmq-app.mjs'));
  const out = JSON.parse(await ok(process.execPath, ['bullmq-app.mjs', zk, namespace], app));
  assert.deepEqual(out, { returnvalue: { doubled: 42 }, state: 'completed' });
});

test('a TypeScript consumer type-checks against the installed declarations with skipLibCheck off', async () => {
  copyFileSync(join(FIXTURES, 'consumer.ts'), join(app, 'consumer.ts'));
  const compilerOptions = {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
  };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }));
  await ok(process.execPath, [TSC, '-p', 'tsconfig.json'], app);
});

test('the zkq binary runs from node_modules/.bin', async () => {
  const zkq = join(app, 'node_modules/.bin/zkq');
  const help = await ok(zkq, ['--help'], app);
  for (const command of ['worker', 'add', 'stats', 'dev-server']) assert.match(help, new RegExp(`zkq ${command}\\b`));
});

// Last: it moves @zkq/testing out of the scratch project.
test('without @zkq/testing the CLI still runs, and dev-server says what to install', async () => {
  renameSync(join(app, 'node_modules/@zkq/testing'), join(scratch, 'testing-aside'));
  const zkq = join(app, 'node_modules/.bin/zkq');
  await ok(zkq, ['--help'], app);
  const r = await run(zkq, ['dev-server', '--port', '0'], app);
  assert.equal(r.code, 6, r.stderr);
  assert.match(r.stderr, /optional package @zkq\/testing.*npm install @zkq\/testing/);
});
