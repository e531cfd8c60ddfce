˜
  add.f r0.y, r0.x, r0.x
  (rpt1)mul.f r1.x, (r)r0.x, c2.x
  mad.f32 r2.x, r1.x, r1.y, r0.y
  rcp r2.y, r2.x
  (ss)cov.f32f16 hr4.x, r2.y
  sel.b32 r3.x, r2.x, r0.z, r2.y
  end
