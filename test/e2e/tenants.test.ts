/**
 * The CLI as a second tenant: a namespace made by one digest identity (its
 * nodes creator-only) is closed to another identity's every command, each
 * ending with one line naming the node refused and exit 4 (not authorized),
 * never a stack trace; the owner's commands work, and nothing of the owner's
 * changed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXIT } from '@zkq/cli';
import { cliEnv, zkq } from './cli.js';

test("another tenant's commands on a namespace it may not use: one line each, exit 4", async (t) => {
  const env = await cliEnv(t);
  const owner = [...env.global, '--auth=tenant-a:pw-a'];
  const stranger = [...env.global, '--auth=tenant-b:pw-b'];
  const added = await zkq(['add', 'mail', 'send', '--data={"to":"a@example.com"}', ...owner]);
  assert.equal(added.code, 0, added.stderr);
  const id = added.stdout.trim();

  for (const args of [
    ['queues'],
    ['stats', 'mail'],
    ['jobs', 'mail', '--state=waiting'],
    ['job', 'mail', id],
    ['add', 'mail', 'spam'],
    ['remove', 'mail', id],
    ['obliterate', 'mail', '--yes'],
  ]) {
    const r = await zkq([...args, ...stranger]);
    assert.equal(r.code, EXIT.NOT_AUTHORIZED, `${args.join(' ')}: ${r.stderr}`);
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(
      lines[0] as string,
      /^zkq: not authorized: the ACL of (the namespace node|\/\S+ in the namespace) does not grant this identity the operation \(check --auth, --sasl or --tls-cert\)$/,
    );
  }

  const stats = await zkq(['stats', 'mail', '--json', ...owner]);
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(JSON.parse(stats.stdout).counts.waiting, 1, "the owner's job is still waiting");
  const job = await zkq(['job', 'mail', id, '--json', ...owner]);
  assert.equal(job.code, 0, job.stderr);
  assert.equal(JSON.parse(job.stdout).name, 'send');
});
