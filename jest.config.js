/** Two projects: `unit` (pure logic, fake clocks, no n8n) and `e2e` (the package inside a real n8n). */
const { selection } = require('./test/harness/outOfCi');

/**
 * What the e2e project leaves out: the suites and cases `npm test` (CI) leaves out for its time
 * (test/harness/outOfCi.js; E2E_FULL brings them in: `npm run test:full`), and on n8n 1.x the cases
 * that do not hold there (E2E_LEFT_OUT, a regex of case names, set by scripts/test-n8n1.sh). A
 * `--testNamePattern` on the command line replaces the case part (the queue lane names its cases).
 */
const outOfCi = selection({
	full: Boolean(process.env.E2E_FULL),
	n8n1: Number((process.env.N8N_VERSION ?? '2').split('.')[0]) < 2,
	leftOut: process.env.E2E_LEFT_OUT,
});
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
/** Installed copies of n8n and of this package: not source, and they confuse jest's module map. */
const modulePathIgnorePatterns = [
	'<rootDir>/.cache/',
	// npm start's folders: .n8n-dev, .n8n-dev-queue, and either with an n8n version appended.
	'<rootDir>/.n8n-dev',
	'<rootDir>/.toolchain/',
	'<rootDir>/dist/',
];
module.exports = {
	// A guard against a test that hangs, not a speed check (bench/ measures speed): jest's 5 s default
	// failed a 70,000-key node test on CI's 2 cores at a load average of 10. jest reads it only here,
	// not per project; the e2e setup sets its own (test/harness/jestSetup.ts).
	testTimeout: 60_000,
	// A suite whose beforeAll failed midway leaves what it had started inside the test process (a fake
	// system's HTTP server, a child's pipes): an in-band run (the queue and 1.x lanes) would then never
	// exit, and CI would wait for its 90 minutes. Jest exits once the run and the global teardown,
	// which stops the servers the suites started (test/harness/startedServers.ts), have ended.
	forceExit: true,
	...(outOfCi.testNamePattern ? { testNamePattern: outOfCi.testNamePattern } : {}),
	// Longest e2e suites first (npm test runs them on two workers).
	testSequencer: '<rootDir>/test/harness/sequencer.js',
	projects: [
		{
			displayName: 'unit',
			testMatch: [
				'<rootDir>/core/**/*.test.ts',
				'<rootDir>/nodes/**/*.test.ts',
				'<rootDir>/credentials/**/*.test.ts',
				// README's and docs/'s links (no n8n either).
				'<rootDir>/test/docs/**/*.test.ts',
				'<rootDir>/test/model/**/*.test.ts',
			],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			modulePathIgnorePatterns,
		},
		{
			displayName: 'e2e',
			testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
			// Tests of queue mode alone (a worker killed) run only when the stack is in queue mode; the
			// suites out of CI (above); and the suites `npm test` runs in another lane
			// (E2E_IN_OTHER_LANE, a regex of file names).
			testPathIgnorePatterns: [
				...(process.env.E2E_TOPOLOGY === 'queue' ? [] : ['/test/e2e/queue[^/]*\\.test\\.ts$']),
				...outOfCi.testPathIgnorePatterns,
				...(process.env.E2E_IN_OTHER_LANE
					? [`/test/e2e/(${process.env.E2E_IN_OTHER_LANE})\\.test\\.ts$`]
					: []),
			],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			modulePathIgnorePatterns,
			globalSetup: '<rootDir>/test/harness/globalSetup.ts',
			globalTeardown: '<rootDir>/test/harness/globalTeardown.ts',
			setupFilesAfterEnv: ['<rootDir>/test/harness/jestSetup.ts'],
		},
	],
};
