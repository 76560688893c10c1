/** Bad usage and an unreachable ZooKeeper: one clear line on stderr, a non-zero exit, no stack trace. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT, EXIT_MEANINGS } from '@zkq/cli';
import { cliEnv, zkq } from './cli.js';

const UNREACHABLE = ['--zk=127.0.0.1:1', '--connect-timeout=1000'];

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one line, got:\n${stderr}`);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace');
  return lines[0] as string;
}

test('an unreachable ZooKeeper gives one line and exit 3, for every kind of command', async () => {
  for (const args of [
    ['add', 'q', 'job'],
    ['stats', 'q'],
    ['barrier', 'b', '--members', '2'],
    ['worker', 'q', '--processor', 'examples/processors/demo.js'],
  ]) {
    const r = await zkq([...args, ...UNREACHABLE]);
    assert.equal(r.code, 3, `${args[0]}: ${r.stderr}`);
    assert.equal(oneLine(r.stderr), 'zkq: cannot reach ZooKeeper at 127.0.0.1:1 within 1000 ms');
    assert.equal(r.stdout, args[0] === 'worker' ? r.stdout : '');
  }
});

test('--verbose adds the stack trace', async () => {
  const r = await zkq(['stats', 'q', ...UNREACHABLE, '--verbose']);
  assert.equal(r.code, 3);
  assert.match(r.stderr, /^zkq: cannot reach ZooKeeper at 127\.0\.0\.1:1 within 1000 ms\n/);
  assert.match(r.stderr, /ConnectTimeoutError/);
  assert.match(r.stderr, /^\s+at /m);
});

test('bad usage and bad input: one line naming the problem, exit 2', async (t) => {
  const env = await cliEnv(t);
  const cases: [string[], RegExp][] = [
    [['frobnicate'], /^zkq: unknown command 'frobnicate' \(zkq --help lists them\)$/],
    [['stat', 'q'], /^zkq: unknown command 'stat'; did you mean stats\? \(zkq --help lists them\)$/],
    [['add'], /^zkq: Not enough non-option arguments: got 0, need at least 2 \(see zkq add --help\)$/],
    [['add', 'q', 'x', '--bogus'], /^zkq: Unknown argument: bogus \(see zkq add --help\)$/],
    [['add', 'q', 'x', '--data', '{nope'], /^zkq: --data is not valid JSON: /],
    [['add', 'q', 'x', '--priority', '-1'], /^zkq: opts\.priority must be an integer from 0 to 2097152$/],
    [['add', 'bad:name', 'x'], /^zkq: invalid queue name "bad:name"/],
    [['add', 'q', 'x', '--job-id', '42'], /^zkq: custom jobId '42' cannot be an integer/],
    [['jobs', 'q', '--state', 'sleeping'], /^zkq: Invalid values: Argument: state, Given: "sleeping", Choices: /],
    [['worker', 'q', '--processor', 'no/such/file.js'], /^zkq: processor file not found: .*no\/such\/file\.js$/],
    [['worker', 'q', '--processor', 'examples/processors/demo.js', '--concurrency', '0'], /^zkq: --concurrency/],
    [['barrier', 'b'], /^zkq: --members must be an integer >= 1$/],
    [['barrier', 'a/b', '--members', '2'], /^zkq: invalid barrier name 'a\/b'/],
    [['add-bulk', 'q', '--file', 'no-such.ndjson'], /^zkq: cannot read no-such\.ndjson: no such file$/],
    [['stats', 'q', '--auth', 'nocolon'], /^zkq: --auth must be user:password$/],
    [['stats', 'q', '--sasl', 'nocolon'], /^zkq: --sasl must be user:password$/],
    [['stats', 'q', '--tls-cert', 'client.pem'], /^zkq: --tls-cert and --tls-key go together$/],
  ];
  for (const [args, expected] of cases) {
    const r = await zkq([...args, ...env.global]);
    assert.equal(r.code, 2, `zkq ${args.join(' ')}: ${r.stderr}`);
    assert.match(oneLine(r.stderr), expected, `zkq ${args.join(' ')}`);
    assert.equal(r.stdout, '');
  }
});

test('every command has --help with examples', async () => {
  const top = await zkq(['--help']);
  assert.equal(top.code, 0);
  const commands = [...top.stdout.matchAll(/^ {2}zkq ([a-z-]+)/gm)].map((m) => m[1] as string);
  assert.ok(commands.length >= 19, commands.join(' '));
  const results = await Promise.all(commands.map((command) => zkq([command, '--help'])));
  results.forEach((r, i) => {
    assert.equal(r.code, 0, `${commands[i]}: ${r.stderr}`);
    assert.match(r.stdout, /^Examples:$/m, `zkq ${commands[i]} --help shows examples`);
  });
});

test('zkq alone prints the help once, on stderr, and exits 2', async () => {
  const r = await zkq([]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.match(/^Commands:$/gm)?.length, 1, r.stderr);
  assert.match(r.stderr, /^ {2}zkq stats <queue>/m);
  assert.equal(r.stderr.match(/zkq --help/g), null, 'no hint pointing to the help just printed');
});

test('the help lists every exit code, and points to nothing that does not ship', async () => {
  const r = await zkq(['--help']);
  assert.equal(r.code, 0);
  const epilogue = r.stdout.slice(r.stdout.indexOf('Exit codes:')).replace(/\s+/g, ' ');
  const codes = [...epilogue.matchAll(/(\d+) [^,.]+/g)].map((m) => Number(m[1]));
  assert.deepEqual(
    codes,
    [...new Set(Object.values(EXIT))].sort((a, b) => a - b),
  );
  for (const [code, meaning] of Object.entries(EXIT_MEANINGS)) assert.ok(epilogue.includes(`${code} ${meaning}`));
  assert.doesNotMatch(r.stdout, /docs\/|\.md\b/);
});

test('ZooKeeper options are listed and accepted only by commands that connect', async () => {
  const zkOptions = [
    '--zk',
    '--namespace',
    '--auth',
    '--sasl',
    '--acl',
    '--tls-ca',
    '--tls-cert',
    '--tls-key',
    '--connect-timeout',
    '--session-timeout',
  ];
  const [dev, demo, stats] = await Promise.all([
    zkq(['dev-server', '--help']),
    zkq(['demo', '--help']),
    zkq(['stats', '--help']),
  ]);
  for (const option of zkOptions) {
    assert.ok(!dev.stdout.includes(option), `dev-server --help lists ${option}`);
    assert.ok(stats.stdout.includes(option), `stats --help lacks ${option}`);
    assert.equal(demo.stdout.includes(option), option === '--namespace', `demo --help and ${option}`);
  }
  const refused = await zkq(['dev-server', '--zk', '127.0.0.1:1']);
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr, 'zkq: Unknown argument: zk (see zkq dev-server --help)\n');
});
