#!/usr/bin/env node
import { main } from './cli.js';
import { watchStdout } from './output.js';

watchStdout();
const code = await main(process.argv.slice(2));
process.exit(code);
