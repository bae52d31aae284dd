/* HLO text printer. */
#include "io.h"

void shs_text_print(shs_buf *b, const shs_module *m, const shs_text_style *style)
{
	(void)b; (void)m; (void)style;
}

void shs_shape_print(shs_buf *b, const shs_shape *s, bool with_layout)
{
	(void)b; (void)s; (void)with_layout;
}
