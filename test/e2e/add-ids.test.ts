/** What `zkq add` gives back: a note when the jobId existed, and ids that count 1, 2, 3. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cliEnv, zkq, zkqJson } from './cli.js';

test('adding an existing jobId says so on stderr and exits 0', async (t) => {
  const env = await cliEnv(t);
  const first = await zkq(['add', 'dup', 'x', '--job-id', 'once', ...env.global]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stderr, '');
  const again = await zkq(['add', 'dup', 'x', '--job-id', 'once', ...env.global]);
  assert.equal(again.code, 0);
  assert.equal(again.stdout, 'once\n');
  assert.equal(again.stderr, 'zkq: job once already exists in queue dup; it was not added again\n');
  const json = await zkq(['add', 'dup', 'x', '--job-id', 'once', '--json', ...env.global]);
  assert.equal(JSON.parse(json.stdout).existed, true);
  assert.equal((await zkqJson(['add', 'dup', 'x', '--job-id', 'other', ...env.global])).existed, false);

  const lines = ['{"name":"a","opts":{"jobId":"once"}}', '{"name":"b","opts":{"jobId":"fresh"}}'].join('\n');
  const bulk = await zkq(['add-bulk', 'dup', '--json', ...env.global], { input: lines });
  assert.equal(bulk.code, 0, bulk.stderr);
  assert.equal(JSON.parse(bulk.stdout).added, 1);
  assert.equal(JSON.parse(bulk.stdout).existed, 1);
  assert.equal(
    bulk.stderr,
    'zkq: 1 of the jobs already existed in queue dup (same jobId); they were not added again\n',
  );
});

test('job ids count up from 1 across processes, without gaps', async (t) => {
  const env = await cliEnv(t);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await zkq(['add', 'seq', 'x', ...env.global]);
    assert.equal(r.code, 0, r.stderr);
    ids.push(r.stdout.trim());
  }
  assert.deepEqual(ids, ['1', '2', '3']);
  const lines = Array.from({ length: 5 }, () => '{"name":"b"}').join('\n');
  assert.equal((await zkq(['add-bulk', 'seq', ...env.global], { input: lines })).code, 0);
  const waiting = await zkqJson(['jobs', 'seq', '--end', '-1', ...env.global]);
  assert.deepEqual(
    waiting.map((j: { id: string }) => j.id),
    ['1', '2', '3', '4', '5', '6', '7', '8'],
  );
});
