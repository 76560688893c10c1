/**
 * A processor as an application would write one: validates its input,
 * does the work (here a pretend mail transfer), logs, and returns a result.
 * Throwing fails the attempt; the job is retried while attempts are left.
 *
 *   zkq worker emails --processor examples/processors/send-email.js
 *   zkq add emails welcome --data '{"to":"ada@example.com","subject":"Hi"}' --attempts 3
 */
import { setTimeout as sleep } from 'node:timers/promises';

export default async function sendEmail(job) {
  const { to, subject = '(no subject)' } = job.data ?? {};
  if (typeof to !== 'string' || !to.includes('@')) throw new Error(`job ${job.id}: data.to must be an address`);
  await job.log(`sending '${subject}' to ${to}`);
  await sleep(20); // the mail server's round trip
  return { to, messageId: `${job.id}.${Date.now()}@zkq.example` };
}
