// The soak's file processor (worker threads do not inherit the TypeScript loader of their
// process): it loads it in its thread, then runs thread-attempt.ts.
import { register } from 'tsx/esm/api';

register();
const { default: attempt } = await import('./thread-attempt.ts');

export default attempt;
