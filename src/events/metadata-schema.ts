import { z } from 'zod';
import type { EventMetadata } from './envelope.js';

/** What an event's metadata must be: `EventMetadata`, checked on append and by `verify`. */
export const EventMetadataSchema: z.ZodType<EventMetadata> = z
  .object({
    recordedAt: z.string().min(1),
    causationId: z.string().optional(),
    correlationId: z.string().optional(),
  })
  .catchall(z.json()) as z.ZodType<EventMetadata>;
