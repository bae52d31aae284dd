/* (being split out) */
