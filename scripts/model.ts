/**
 * `npm run model -- --runs N --seed S [--model poll|schedule] [--style X] [--path P]`: the seeded
 * model simulation of the triggers' cores (test/model/), for long runs and for replaying a seed
 * (with the path a failure printed, one schedule). Prints progress as it goes; exits 1 with the
 * shrunk counterexample's story when a schedule breaks a property.
 */
import { checkPollModel } from '../test/model/poll';
import { STYLES, type Style } from '../test/model/poll/simulation';
import { checkScheduleModel } from '../test/model/schedule';

interface ModelRun {
	runs: number;
	seed: number;
	path?: string;
	style?: string;
	onProgress?: (done: number) => void;
}

/**
 * The models, by name: each throws an Error whose message is the shrunk story, and may return how
 * often each declared case came up.
 */
const models: Record<string, (options: ModelRun) => Promise<Record<string, number> | void>> = {
	poll: async (options) => {
		if (options.style !== undefined && !(STYLES as readonly string[]).includes(options.style))
			throw new Error(`--style must be one of ${STYLES.join(', ')}, not "${options.style}"`);
		return await checkPollModel({ ...options, style: options.style as Style | undefined });
	},
	schedule: async ({ runs, seed, style, onProgress }) => {
		if (style !== undefined) throw new Error('--style applies to --model poll only');
		await checkScheduleModel({ runs, seed, onProgress });
	},
};

function argument(name: string): string | undefined {
	const at = process.argv.indexOf(`--${name}`);
	return at < 0 ? undefined : process.argv[at + 1];
}

function count(name: string, fallback: number): number {
	const text = argument(name);
	const value = text === undefined ? fallback : Number(text);
	if (!Number.isSafeInteger(value) || value < 0)
		throw new Error(`--${name} must be a whole number, not "${text}"`);
	return value;
}

async function main(): Promise<void> {
	const runs = count('runs', 10_000);
	const seed = count('seed', Date.now() % 2 ** 31);
	const path = argument('path');
	const style = argument('style');
	const names = argument('model')?.split(',') ?? Object.keys(models);
	for (const name of names) {
		const model = models[name];
		if (!model)
			throw new Error(`--model must be one of ${Object.keys(models).join(', ')}, not "${name}"`);
		const started = Date.now();
		let last = started;
		console.log(`${name}: ${runs} schedules from seed ${seed}${style ? `, style ${style}` : ''}`);
		const declared = await model({
			runs,
			seed,
			path,
			style,
			onProgress: (done) => {
				if (Date.now() - last < 5_000 && done !== runs) return;
				last = Date.now();
				console.log(`${name}: ${done} schedules, ${((last - started) / 1000).toFixed(0)} s`);
			},
		});
		console.log(
			`${name}: ${runs} schedules, nothing found, ${((Date.now() - started) / 1000).toFixed(1)} s`,
		);
		for (const [what, count] of Object.entries(declared ?? {}))
			console.log(`${name}: declared, counted: ${what}: ${count}`);
	}
}

main().catch((error: Error) => {
	console.error(error.message);
	process.exit(1);
});
