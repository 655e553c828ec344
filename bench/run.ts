/** Runs every benchmark in bench/ one after the other; each prints its own figures and ratios. */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

for (const file of readdirSync(__dirname)
	.filter((f) => f.endsWith('.bench.ts'))
	.sort()) {
	process.stdout.write(`\n== ${file}\n`);
	execFileSync(process.execPath, ['--import', 'tsx', join(__dirname, file)], { stdio: 'inherit' });
}
