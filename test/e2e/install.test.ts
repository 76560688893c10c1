/**
 * The documented way to run the CLI in a checkout, `npm ci && npm run build`
 * then `npx zkq`, tried in a fresh clone of the committed tree (HEAD). npx
 * runs offline here: were `zkq` not linked, it would ask the registry for a
 * package of that name instead, and fail. To stay light, the clone is not
 * built: before the build the command must say how to build; then this
 * checkout's build is copied in and the same command runs the CLI.
 */
import assert from 'node:assert/strict';
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { cpSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { REPO } from './cli.js';

/** Every workspace package (their build output is copied into the clone). */
const PACKAGES: string[] = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).workspaces.map((w: string) =>
  w.replace('packages/', ''),
);
const COMMAND_TIMEOUT_MS = 120_000;

/** The environment without what a surrounding `npm run` set for its own scripts. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
  return { ...env, ...extra };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = cleanEnv()): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS });
}

function ok(r: SpawnSyncReturns<string>, what: string): void {
  assert.equal(r.status, 0, `${what} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}\n${r.stderr}`);
}

const inGit = run('git', ['rev-parse', '--is-inside-work-tree'], REPO).stdout?.trim() === 'true';

test('npx zkq works in a fresh clone after npm ci (and says how to build before the build)', {
  skip: !inGit && 'not a git checkout',
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zkq-clone-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const clone = join(dir, 'zkq');
  ok(run('git', ['clone', '--quiet', REPO, clone], dir), 'git clone');
  ok(run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], clone), 'npm ci');

  const link = join(clone, 'node_modules', '.bin', 'zkq');
  assert.ok(lstatSync(link).isSymbolicLink(), 'npm ci linked node_modules/.bin/zkq');
  assert.equal(
    resolve(join(clone, 'node_modules', '.bin'), readlinkSync(link)),
    join(clone, 'node_modules/@zkq/cli/bin/zkq.js'),
  );

  const offline = cleanEnv({ npm_config_offline: 'true' });
  const before = run('npx', ['zkq', '--version'], clone, offline);
  assert.equal(before.status, 1, before.stderr);
  const said = before.stderr.split('\n').filter((l) => l && !l.startsWith('npm warn'));
  assert.deepEqual(said, [`zkq: the CLI is not built yet: run 'npm run build' in ${realpathSync(clone)}`]);

  for (const pkg of PACKAGES)
    cpSync(join(REPO, 'packages', pkg, 'dist'), join(clone, 'packages', pkg, 'dist'), { recursive: true });
  const version = run('npx', ['zkq', '--version'], clone, offline);
  ok(version, 'npx zkq --version');
  const { version: expected } = JSON.parse(readFileSync(join(REPO, 'packages/cli/package.json'), 'utf8'));
  assert.equal(version.stdout, `${expected}\n`);
  const help = run('npm', ['exec', '--', 'zkq', 'stats', '--help'], clone, offline);
  ok(help, 'npm exec -- zkq stats --help');
  assert.match(help.stdout, /^zkq stats <queue>$/m);
});
