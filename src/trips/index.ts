export * from './status.js';
export * from './trips.js';
