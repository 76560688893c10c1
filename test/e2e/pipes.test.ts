/** A closed stdout (`zkq stats q | head -3`) ends any command quietly: exit 0, nothing on stderr. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cliEnv, within, ZkqProcess, zkq } from './cli.js';

test('a command whose stdout reader went away exits 0 without a word', async (t) => {
  const env = await cliEnv(t);
  const lines = Array.from({ length: 50 }, (_, i) => JSON.stringify({ name: 'x', data: { i } })).join('\n');
  assert.equal((await zkq(['add-bulk', 'q', ...env.global], { input: lines })).code, 0);
  const commands = [
    ['stats', 'q'],
    ['jobs', 'q', '--end', '-1'],
    ['job', 'q', '1'],
    ['queues'],
    ['--help'],
    ['worker', 'q', '--processor', 'examples/processors/demo.js'],
  ];
  for (const args of commands) {
    const p = new ZkqProcess([...args, ...(args[0] === '--help' ? [] : env.global)]);
    t.after(() => p.dispose());
    // Closed before the process can write anything: its first write fails with EPIPE.
    p.child.stdout?.destroy();
    const r = await within(p.exited, 60_000, `zkq ${args[0]} to exit`);
    assert.equal(r.code, 0, `zkq ${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, '', `zkq ${args.join(' ')}`);
  }
});
