import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testSession } from '../helpers/zk.js';

test('smoke: create and read back', async (t) => {
  const s = await testSession(t);
  await s.create('/a', Buffer.from('x'));
  const { data } = await s.getData('/a');
  assert.equal(data.toString(), 'x');
});
