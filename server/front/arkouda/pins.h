/* What Arkouda's registry keeps besides the registered name (its registered_entries): the
 * client's own names of the parts it registered. list_registry gives them as Components,
 * delete and clear leave them while the name that registered them stands, and attach of an
 * array gives the client's array back, as Arkouda's server does. Kept per caller (its user,
 * or none) on the rank that serves the endpoint, for the life of the daemon: a registered
 * name restored from a checkpoint has none, and attach names its parts by their paths. */
#ifndef H5ARK_AK_PINS_H
#define H5ARK_AK_PINS_H

#include "front/arkouda/codec.h"

/* The names of the parts a register request names (every name its arguments give, those in
 * JSON objects of parts included), each once: a new JSON array, NULL without memory. */
json_t *ak_pins_of_request(const ak_request *in);
/* Keep names (a JSON array, taken) for the caller's registered name reg, replacing any. */
int ak_pins_set(const char *reg, json_t *names);
/* The caller's registered name reg keeps nothing any more. */
void ak_pins_drop(const char *reg);
/* The names kept for the caller's reg: a new reference, NULL for none. */
json_t *ak_pins_get(const char *reg);
/* The caller's registered names that keep `name`: a new JSON array (empty for none), NULL
 * without memory. */
json_t *ak_pins_holders(const char *name);

#endif
