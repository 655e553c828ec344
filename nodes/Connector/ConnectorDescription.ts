import type { INodeProperties } from 'n8n-workflow';

import { connectorProperties } from '../shared/parameters';

/** The Connector's parameters: the op and its arguments, as the Poll Trigger's. */
export const connectorNodeProperties: INodeProperties[] = connectorProperties(
	"The op's arguments as JSON; expressions may read the input item, for example its uid",
);
