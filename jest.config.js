/** Two projects: `unit` (pure logic, fake clocks, no n8n) and `e2e` (the package inside a real n8n). */
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
			// 1,000-item crash only with E2E_BURST set; and
			// the suites `npm test` runs in another lane (E2E_IN_OTHER_LANE, a regex of file names).
			testPathIgnorePatterns: [
				...(process.env.E2E_TOPOLOGY === 'queue' ? [] : ['/test/e2e/queue[^/]*\\.test\\.ts$']),
				// The 1,000-item crash runs alone, by its own script (npm run test:burst).
				...(process.env.E2E_BURST ? [] : ['/test/e2e/burst[^/]*\\.test\\.ts$']),
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
