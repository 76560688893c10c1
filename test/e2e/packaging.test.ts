/**
 * The packages as users get them: `npm run pack` (the README's command)
 * puts every workspace's tarball into packs/, and the README's one install
 * line takes them all into a scratch project outside the repository (so
 * nothing resolves through the workspace). From there: the README's own app
 * against the installed `zkq dev-server`, a producer and a worker, a
 * TypeScript consumer checked with skipLibCheck off, and the `zkq` binary
 * from node_modules/.bin, with and without @zkq/testing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sharedZooKeeper, uniqueRoot } from '@zkq/testing';
import { REPO, within } from './cli.js';

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

/** The environment of the commands below: no outer `npm run`, no ZKQ_ZK unless given. */
function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !OUTER_NPM_RUN.test(k)));
  delete env.ZKQ_ZK;
  return { ...env, ...extra };
}

/** Runs a command to its end (killed after STEP_TIMEOUT_MS). */
function run(cmd: string, args: string[], cwd: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
  const env = childEnv(extraEnv);
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

async function ok(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const r = await run(cmd, args, cwd, env);
  assert.equal(r.code, 0, `${cmd} ${args.join(' ')} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

let scratch: string;
let app: string;
const packed = new Map<string, { filename: string; files: string[] }>();

/** The README's block of `lang` whose first line starts with `first`. */
function readmeBlock(lang: string, first: string): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].find(
    (m) => m[1] === lang && (m[2] as string).startsWith(first),
  );
  assert.ok(block, `README has a ${lang} block starting with ${first}`);
  return block[2] as string;
}

before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'zkq-packaging-'));
  app = join(scratch, 'app');
  // The README's install: `npm run pack` in the checkout, then one `npm install` of every tarball.
  const install = readmeBlock('sh', 'cd zkq && npm ci && npm run pack');
  assert.match(install, /^cd \.\.\/my-app && npm install \.\.\/zkq\/packs\/\*\.tgz$/m);
  await ok('npm', ['run', 'pack', '--silent'], REPO);
  const packs = join(REPO, 'packs');
  const tarballs = readdirSync(packs).filter((f) => f.endsWith('.tgz'));
  for (const filename of tarballs) {
    const name = /^zkq-(.+)-\d+\.\d+\.\d+\.tgz$/.exec(filename)?.[1] ?? filename;
    const listing = await ok('tar', ['-tzf', join(packs, filename)], packs);
    const files = listing
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    packed.set(name, { filename, files });
  }
  assert.deepEqual([...packed.keys()].sort(), [...PACKAGES].sort(), 'one tarball per package, nothing stale');
  // The consumer's own @types/node, as any TypeScript project on Node has.
  const typesNode = readJson(join(REPO, 'package.json')).devDependencies['@types/node'];
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: { '@types/node': typesNode } }),
  );
  await ok(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...tarballs.map((f) => join(packs, f)),
    ],
    app,
  );
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
  for (const f of ['dist/internal.js', 'dist/internal.d.ts']) {
    assert.ok(packed.get('core')?.files.includes(f), `@zkq/core ships ${f}, its internal entry for the other packages`);
  }
});

test("the README's own app runs against the installed zkq dev-server", async (t) => {
  writeFileSync(join(app, 'readme-app.mjs'), readmeBlock('js', '// app.mjs'));
  const server = spawn(join(app, 'node_modules/.bin/zkq'), ['dev-server', '--port', '0', '--no-install'], {
    cwd: app,
    env: childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  t.after(() => server.kill('SIGKILL'));
  let output = '';
  server.stderr.on('data', (d) => {
    output += d;
  });
  const zk = await within(
    new Promise<string>((resolve, reject) => {
      server.stdout.on('data', (d) => {
        output += d;
        const m = /^export ZKQ_ZK=(\S+)$/m.exec(output);
        if (m) resolve(m[1] as string);
      });
      server.once('exit', (code) => reject(new Error(`dev-server exited ${code}:\n${output}`)));
    }),
    STEP_TIMEOUT_MS,
    'the dev-server to serve',
  );
  const out = await ok(process.execPath, ['readme-app.mjs'], app, { ZKQ_ZK: zk });
  assert.deepEqual(out.trimEnd().split('\n').sort(), ['added job 1', "job 1 completed: { sentTo: 'ada@example.com' }"]);
  server.kill('SIGTERM');
  assert.equal(await within(exited, STEP_TIMEOUT_MS, 'the dev-server to stop'), 0, output);
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
