/** Two projects: `unit` (pure logic, fake clocks, no n8n) and `e2e` (the package inside a real n8n). */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json' }];
module.exports = {
	projects: [
		{
			displayName: 'unit',
			testMatch: ['<rootDir>/core/**/*.test.ts', '<rootDir>/nodes/**/*.test.ts', '<rootDir>/credentials/**/*.test.ts', '<rootDir>/test/unit/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
		},
		{
			displayName: 'e2e',
			testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
			transform: { '^.+\\.ts$': tsJest },
			testEnvironment: 'node',
			globalSetup: '<rootDir>/test/harness/globalSetup.ts',
			setupFilesAfterEnv: ['<rootDir>/test/harness/jestSetup.ts'],
		},
	],
};
