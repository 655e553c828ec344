import {
	type IDataObject,
	type IExecuteFunctions,
	type INodeExecutionData,
	type INodeType,
	type INodeTypeDescription,
	NodeConnectionTypes,
} from 'n8n-workflow';

import { parseWith } from '../../core/connectors/args';
import { inOp } from '../../core/connectors/network';
import { resolveOp } from '../../core/connectors/registry';
import { toNodeError } from '../shared/errors';
import { imapCredentialTest } from '../shared/imapCredentialTest';
import { opContext } from '../shared/opContext';
import { ftpCredentialTest } from '../shared/ftpCredential';
import { sftpCredentialTest } from '../shared/sftpCredential';
import { connectorCredentials, connectorHttpAuth } from '../shared/parameters';
import { connectorNodeProperties } from './ConnectorDescription';

/**
 * Runs one connector op per input item: the same ops, `with` arguments and credentials as the Poll
 * Trigger, so a workflow can act on what it polled — e.g. mark an email seen as its last step.
 */
export class Connector implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Connector',
		name: 'connector',
		icon: { light: 'file:connector.svg', dark: 'file:connector.dark.svg' },
		group: ['transform'],
		version: [1, 1.1],
		defaultVersion: 1.1,
		subtitle: '={{$parameter["op"]}}',
		description:
			'Runs a connector op (HTTP, IMAP, SQL, SFTP, S3) of the Durable Triggers package as an action',
		defaults: { name: 'Connector' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: connectorCredentials,
		properties: connectorNodeProperties,
	};

	methods = { credentialTest: { imapCredentialTest, sftpCredentialTest, ftpCredentialTest } };

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const output: INodeExecutionData[] = [];
		const op = resolveOp(this.getNodeParameter('op', 0) as string);
		let context: Awaited<ReturnType<typeof opContext>>;
		try {
			context = await opContext(this, op, () =>
				connectorHttpAuth(this.getNode(), (name, fallback) =>
					this.getNodeParameter(name, 0, fallback),
				),
			);
		} catch (error) {
			throw toNodeError(this.getNode(), error);
		}
		for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
			try {
				const result = await op.run(parseWith(this.getNodeParameter('with', itemIndex)), {
					...context,
					memory: {},
				});
				const data = result.kind === 'data' ? result.data : { notModified: true };
				const json =
					typeof data === 'object' && data !== null && !Array.isArray(data)
						? (data as IDataObject)
						: { result: data as IDataObject[] };
				output.push({
					json,
					...(result.kind === 'data' &&
						result.file && {
							binary: {
								data: await this.helpers.prepareBinaryData(result.file.data, result.file.fileName),
							},
						}),
					pairedItem: { item: itemIndex },
				});
			} catch (error) {
				const failure = toNodeError(this.getNode(), inOp(op.name, error), itemIndex);
				if (this.continueOnFail()) {
					output.push({ json: { error: failure.message }, pairedItem: { item: itemIndex } });
					continue;
				}
				throw failure;
			}
		}
		return [output];
	}
}
