/** The executor's packet budget, without any fault. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '@zkq/producer';
import { queueEnv } from '../../../helpers/queue.js';

for (const [n, size, custom] of [
  [3000, 2000, true],
  [3000, 2000, false],
  [2000, 100, true],
  [300, 12_000, false],
] as const) {
  for (const short of [true, false]) {
    test(`addBulk ${n} x ${size} B, custom ids ${custom}, short prefix ${short}`, async (t) => {
      const env = await queueEnv(t);
      if (short) env.prefix = `p${Math.random().toString(36).slice(2, 8)}`;
      else env.prefix = `${env.prefix}-${'x'.repeat(120)}`;
      const queue = new Queue('q', env);
      t.after(() => queue.close());
      const jobs = Array.from({ length: n }, (_, i) => ({
        name: 'j',
        data: { pad: 'x'.repeat(size) },
        opts: custom ? { jobId: `order-${i}` } : {},
      }));
      const added = await queue.addBulk(jobs).catch((e) => e);
      if (!Array.isArray(added)) {
        const chain: string[] = [];
        for (let e = added; e; e = e.cause) chain.push(String(e));
        console.log(chain, await queue.getJobCounts());
      }
      assert.ok(Array.isArray(added));
      assert.equal((await queue.getJobCounts()).waiting, n);
    });
  }
}
