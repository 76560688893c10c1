/**
 * A small app written the way BullMQ users write one. It imports everything
 * from `#mq`, which tsconfig.bullmq.json maps to BullMQ and tsconfig.zkq.json
 * maps to zkq's packages, so the same code is type-checked against both.
 * Only the connection, passed in by the entry files, differs.
 *
 * It is never run: it exists to compile.
 */
import {
  type BackoffOptions,
  type DefaultJobOptions,
  type Job,
  type JobProgress,
  type JobState,
  type JobsOptions,
  type JobType,
  type KeepJobs,
  type Processor,
  Queue,
  type QueueOptions,
  UnrecoverableError,
  Worker,
  type WorkerOptions,
} from '#mq';
import { expectAssignable, expectType } from './expect.js';

export interface EmailData {
  to: string;
  subject: string;
  body?: string;
}

export interface EmailResult {
  messageId: string;
  sentAt: number;
}

export type EmailJobName = 'send' | 'digest';

export type EmailJob = Job<EmailData, EmailResult, EmailJobName>;

/** Stands in for the app's mailer. */
declare function sendMail(data: EmailData): Promise<string>;

export async function app(connection: QueueOptions['connection']): Promise<void> {
  const defaultJobOptions: DefaultJobOptions = {
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: 1000,
    removeOnFail: { age: 7 * 24 * 3600 },
  };
  const queue = new Queue<EmailData, EmailResult, EmailJobName>('emails', { connection, defaultJobOptions });

  // Queue.add with the options apps typically set.
  const job = await queue.add(
    'send',
    { to: 'ada@example.com', subject: 'Welcome' },
    {
      attempts: 5,
      backoff: { type: 'exponential', delay: 2000 },
      delay: 60_000,
      priority: 10,
      jobId: 'welcome-ada',
      removeOnComplete: true,
      removeOnFail: 500,
      lifo: false,
    },
  );
  expectType<EmailJob>()(job);
  const data: EmailData = job.data;
  const name: EmailJobName = job.name;
  const jobId: string | undefined = job.id;
  const stamp: number = job.timestamp + job.delay + job.priority + job.attemptsMade;
  const opts: JobsOptions = job.opts;
  console.log(data.to, name, jobId, stamp, opts.attempts);

  await queue.add(
    'digest',
    { to: 'ops@example.com', subject: 'Daily' },
    { removeOnComplete: { age: 3600, count: 100 } },
  );
  await queue.add('digest', { to: 'ops@example.com', subject: 'Daily' }, { removeOnComplete: { count: 10 } });
  await queue.add('send', { to: 'grace@example.com', subject: 'Hi' }, { backoff: 5000, lifo: true });
  await queue.add('send', { to: 'linus@example.com', subject: 'Hi' });

  const fixed: BackoffOptions = { type: 'fixed', delay: 500, jitter: 0.5 };
  const custom: BackoffOptions = { type: 'my-strategy' };
  const keep: KeepJobs = { age: 60, count: 10, limit: 1000 };
  const bulk = await queue.addBulk([
    { name: 'send', data: { to: 'a@example.com', subject: 'A' } },
    { name: 'send', data: { to: 'b@example.com', subject: 'B' }, opts: { priority: 1, backoff: fixed } },
    { name: 'digest', data: { to: 'c@example.com', subject: 'C' }, opts: { backoff: custom, removeOnFail: keep } },
  ]);
  expectType<EmailJob[]>()(bulk);

  // Reading the queue back.
  const found = await queue.getJob('welcome-ada');
  if (found) {
    const state: JobState | 'unknown' = await found.getState();
    const finished = (await found.isCompleted()) || (await found.isFailed());
    const progress: JobProgress = found.progress;
    console.log(found.data.subject, found.returnvalue?.messageId, state, finished, progress);
  }
  const state: JobState | 'unknown' = await queue.getJobState('welcome-ada');
  const types: JobType[] = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'];
  const listed: EmailJob[] = await queue.getJobs(types, 0, 99, true);
  const failed: EmailJob[] = await queue.getJobs('failed');
  const counts = await queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed');
  const waiting: number = counts.waiting ?? 0;
  const total: number = await queue.getJobCountByTypes('waiting', 'delayed');
  const pending: number = await queue.count();
  const firstWaiting: EmailJob[] = await queue.getWaiting(0, 9);
  const active: EmailJob[] = await queue.getActive();
  const delayed: EmailJob[] = await queue.getDelayed();
  const completed: EmailJob[] = await queue.getCompleted(0, 9);
  const failedJobs: EmailJob[] = await queue.getFailed();
  console.log(state, listed.length, failed.length, waiting, total, pending, firstWaiting, active, delayed);
  console.log(completed, failedJobs);

  queue.on('error', (err) => console.error(err.message));
  queue.on('waiting', (waitingJob) => console.log(waitingJob.id, waitingJob.data.to));
  queue.on('paused', () => console.log('paused'));
  queue.on('resumed', () => console.log('resumed'));
  queue.on('cleaned', (ids, type) => console.log(ids.length, type));

  await queue.pause();
  const paused: boolean = await queue.isPaused();
  await queue.resume();
  console.log(paused);

  // A typed processor.
  const processor = async (job: Job<EmailData, EmailResult, 'send' | 'digest'>): Promise<EmailResult> => {
    if (!job.data.to.includes('@')) throw new UnrecoverableError(`bad address: ${job.data.to}`);
    await job.updateProgress(10);
    await job.log(`sending ${job.name} to ${job.data.to} (attempt ${job.attemptsMade + 1})`);
    const messageId = await sendMail(job.data);
    await job.updateProgress({ stage: 'sent', pct: 100 });
    const lines: number = await job.log('sent');
    console.log(lines, job.queueName, job.token);
    return { messageId, sentAt: Date.now() };
  };

  const workerOptions: WorkerOptions = {
    connection,
    concurrency: 10,
    autorun: false,
    lockDuration: 60_000,
    lockRenewTime: 20_000,
    maxStalledCount: 2,
    stalledInterval: 30_000,
    drainDelay: 5,
    removeOnComplete: { age: 3600, count: 1000 },
    removeOnFail: { count: 5000 },
    name: 'mailer-1',
    limiter: { max: 100, duration: 60_000 },
    maximumRateLimitDelay: 10_000,
    settings: {
      backoffStrategy: (attemptsMade, type, err, job) => {
        if (type !== 'my-strategy') return -1;
        if (err instanceof UnrecoverableError) return -1;
        return Math.min(60_000, 1000 * 2 ** attemptsMade) + (job?.attemptsMade ?? 0);
      },
    },
  };
  const worker = new Worker<EmailData, EmailResult, EmailJobName>('emails', processor, workerOptions);

  worker.on('completed', (job, result) => {
    expectType<EmailJob>()(job);
    const sent: EmailResult = result;
    console.log(job.id, sent.messageId, job.returnvalue);
  });
  worker.on('failed', (job, err) => {
    const maybe: EmailJob | undefined = job;
    console.log(maybe?.id, job?.failedReason, job?.stacktrace, job?.attemptsMade, err.message);
  });
  worker.on('progress', (job, progress) => {
    const p: JobProgress = progress;
    console.log(job.id, typeof p === 'number' ? p : JSON.stringify(p));
  });
  worker.on('active', (job, prev) => console.log(job.id, prev));
  worker.on('stalled', (jobId, prev) => console.log(jobId.length, prev));
  worker.on('error', (err) => console.error(err.message));
  worker.on('drained', () => console.log('drained'));
  worker.on('ready', () => console.log('ready'));
  worker.on('closing', (msg) => console.log(msg));
  worker.on('closed', () => console.log('closed'));
  worker.once('completed', (job) => console.log(job.id));
  worker.off('completed', () => undefined);

  // Processors as values, an inline untyped processor, a sandboxed file processor.
  const typed: Processor<EmailData, EmailResult, EmailJobName> = async (job, token, signal) => {
    signal?.throwIfAborted();
    console.log(token);
    return processor(job);
  };
  const inline = new Worker(
    'emails',
    async (job) => {
      console.log(job.data, job.name);
      return 'ok';
    },
    { connection },
  );
  const sandboxed = new Worker('emails', new URL('./processor.js', import.meta.url), { connection, concurrency: 4 });
  const byPath = new Worker('emails', '/srv/app/processor.js', { connection, useWorkerThreads: true });
  const typedWorker = new Worker('emails', typed, { connection });

  const running: Promise<void> = worker.run();
  const isRunning: boolean = worker.isRunning();
  await worker.pause(true);
  const isPaused: boolean = worker.isPaused();
  worker.resume();
  await worker.waitUntilReady();
  console.log(isRunning, isPaused, worker.name, worker.id, worker.opts.concurrency);

  // Global limits, and a processor that backs off when the mail provider says so.
  const added: number = await queue.setGlobalConcurrency(4);
  const concurrency: number | null = await queue.getGlobalConcurrency();
  await queue.setGlobalRateLimit(50, 1000);
  const rate = await queue.getGlobalRateLimit();
  const ttl: number = await queue.getRateLimitTtl();
  const maxed: boolean = await queue.isMaxed();
  await queue.rateLimit(1000);
  const removed: number = await queue.removeRateLimitKey();
  await queue.removeGlobalRateLimit();
  await queue.removeGlobalConcurrency();
  console.log(added, concurrency, rate?.max, rate?.duration, ttl, maxed, removed);
  const polite = new Worker(
    'emails',
    async (job) => {
      if (job.data.throttled) {
        await polite.rateLimit(30_000);
        throw Worker.RateLimitError();
      }
    },
    { connection, limiter: { max: 10, duration: 1000 } },
  );

  await Promise.all([inline.close(), sandboxed.close(true), byPath.close(), typedWorker.close(), polite.close()]);
  await worker.close();
  await running;
  await queue.close();

  const jobsOptions = expectAssignable<JobsOptions>({ ...defaultJobOptions, jobId: 'x' });
  console.log(jobsOptions);
}
