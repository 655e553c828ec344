import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { cacheDir, n8nBin, nodesTemplateDir, packDir, packageName, repoRoot } from './paths';

/** Installs the pinned n8n once into the git-ignored cache (no-op when it is already there). */
export function ensureN8nInstalled(): void {
	if (existsSync(n8nBin) && existsSync(join(n8nBin, '..', '..', '..', '..', '.ready'))) return;
	execFileSync('bash', [join(repoRoot, 'scripts', 'install-n8n.sh')], {
		stdio: ['ignore', 'ignore', 'inherit'],
	});
}

/**
 * Packs the built package with `npm pack` and installs the tarball into a `nodes` folder the way
 * n8n's community-package install does (dependencies, no peer dependencies: n8n brings n8n-workflow).
 * Each instance copies that folder to `<user folder>/.n8n/nodes`. `alongside`: folders of other
 * community-node packages to install into the same folder (the benchmark's floor node,
 * bench/floor-node), copied in as npm would pack them (`--install-links`): a link into the
 * repository would not survive the copy.
 */
export function packAndPrepareNodesFolder({
	alongside = [],
}: { alongside?: string[] } = {}): string {
	removeFoldersOfEndedProcesses(cacheDir, /^pack-(\d+)$/);
	rmSync(packDir(), { recursive: true, force: true });
	mkdirSync(nodesTemplateDir(), { recursive: true });
	execFileSync('npm', ['pack', '--silent', '--pack-destination', packDir()], {
		cwd: repoRoot,
		stdio: ['ignore', 'ignore', 'inherit'],
	});
	const tarball = readdirSync(packDir()).find(
		(f) => f.startsWith(packageName) && f.endsWith('.tgz'),
	);
	if (!tarball) throw new Error(`npm pack produced no ${packageName} tarball in ${packDir()}`);
	writeFileSync(
		join(nodesTemplateDir(), 'package.json'),
		JSON.stringify({ name: 'installed-nodes', private: true }),
	);
	execFileSync(
		'npm',
		[
			'install',
			'--no-package-lock',
			'--legacy-peer-deps',
			'--ignore-scripts',
			'--loglevel=error',
			join(packDir(), tarball),
			...(alongside.length > 0 ? ['--install-links', ...alongside] : []),
		],
		{ cwd: nodesTemplateDir(), stdio: ['ignore', 'ignore', 'inherit'] },
	);
	return join(packDir(), tarball);
}

/**
 * Installs the packed package into `<user folder>/.n8n/nodes`, replacing what an earlier start put
 * there: a copy over an existing install fails on its `.bin` links (EEXIST) and would mix old and new
 * files, so n8n could load stale code. Links are copied as they are (relative), not resolved into the
 * pack folder, which is removed once its process has ended.
 */
export function copyNodesFolderTo(userFolder: string): void {
	const target = join(userFolder, '.n8n', 'nodes');
	rmSync(target, { recursive: true, force: true });
	cpSync(nodesTemplateDir(), target, { recursive: true, verbatimSymlinks: true });
}

/** Removes the folders in `dir` named by `pattern` (first group: a process id) whose process is gone. */
export function removeFoldersOfEndedProcesses(dir: string, pattern: RegExp): void {
	if (!existsSync(dir)) return;
	for (const entry of readdirSync(dir)) {
		const pid = Number(pattern.exec(entry)?.[1]);
		if (pid && !isAlive(pid)) rmSync(join(dir, entry), { recursive: true, force: true });
	}
}

/** Whether a process with this pid exists (signal 0 checks without sending). */
export function isAlive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch {
		return false;
	}
}
